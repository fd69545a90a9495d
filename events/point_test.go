package events_test

import (
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
)

func TestStartAtReadsEveryWayToNameAPointInTheLog(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 2, 10, 0, time.UTC)
	for _, tc := range []struct {
		point string
		want  events.Query
	}{
		{"", events.Query{}},
		{"all", events.Query{}},
		{"#42", events.Query{FromSeq: 42}},
		{"10m", events.Query{Since: now.Add(-10 * time.Minute)}},
		{"2026-11-30T14:00:00Z", events.Query{Since: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)}},
	} {
		var q events.Query
		if err := q.StartAt(tc.point, now); err != nil {
			t.Errorf("%q: %v", tc.point, err)
			continue
		}
		if q.FromSeq != tc.want.FromSeq || !q.Since.Equal(tc.want.Since) {
			t.Errorf("%q: got from #%d since %v, want #%d since %v", tc.point, q.FromSeq, q.Since, tc.want.FromSeq, tc.want.Since)
		}
	}
	for _, bad := range []string{"#0", "#x", "yesterday", "14:02"} {
		var q events.Query
		if err := q.StartAt(bad, now); err == nil {
			t.Errorf("%q: accepted as from #%d since %v", bad, q.FromSeq, q.Since)
		}
	}
}
