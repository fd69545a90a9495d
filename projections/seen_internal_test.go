package projections

import (
	"encoding/json"
	"strconv"
	"testing"
)

// An agent remembers the last recentIDs event ids it folded, whether its
// row was folded here or read back from a checkpoint (which stores the
// ids, not their hashes): an id among them is a duplicate, one pushed
// out of them is not.
func TestSeenRemembersTheLastIDsAcrossACheckpoint(t *testing.T) {
	id := func(n int) string { return "01JD" + strconv.Itoa(1_000_000+n) }
	a := &agentRow{}
	for n := range recentIDs + 10 {
		if a.seen(id(n)) {
			t.Fatalf("id %d: seen before it was folded", n)
		}
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var restored agentRow
	if err := json.Unmarshal(data, &restored); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		row  *agentRow
	}{{"folded", a}, {"from a checkpoint", &restored}} {
		// The last recentIDs are duplicates (asking changes nothing)…
		for n := 10; n < recentIDs+10; n++ {
			if !c.row.seen(id(n)) {
				t.Errorf("%s row: id %d not seen, want seen", c.name, n)
			}
		}
		// …the ten before them were pushed out: new again.
		for n := range 10 {
			if c.row.seen(id(n)) {
				t.Errorf("%s row: id %d seen, want pushed out", c.name, n)
			}
		}
	}
}
