package claudehook

import (
	"encoding/json"
	"testing"

	"github.com/fleetd/fleetd/projections"
)

// The hook names the roster row and reads its current turn without
// importing projections (see rosterGetSubject); this keeps both spellings
// the projection's.
func TestTheHookReadsTheRosterRowAsTheProjectionNamesIt(t *testing.T) {
	for _, agent := range []string{"w-1", "w-claude-12", "a", "0_x-y", "main"} {
		if got, want := rosterGetSubject(agent), projections.RosterGetSubject(agent); got != want {
			t.Errorf("rosterGetSubject(%q) = %q, want projections' %q", agent, got, want)
		}
	}
	b, err := json.Marshal(projections.Agent{Agent: "w-1", CurrentTurn: "01JD-turn"})
	if err != nil {
		t.Fatal(err)
	}
	var row rosterRow
	if err := json.Unmarshal(b, &row); err != nil || row.CurrentTurn != "01JD-turn" {
		t.Errorf("rosterRow from projections.Agent's JSON %s = %+v, %v; want its current turn", b, row, err)
	}
}
