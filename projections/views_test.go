package projections_test

import (
	"testing"

	"github.com/fleetd/fleetd/projections"
)

func TestOpenCountsEveryTurnOnAnAgentThatIsNotFinal(t *testing.T) {
	roster := []projections.Agent{
		{Agent: "w-1", Role: "w", QueueDepth: 2, CurrentTurn: "T1"},
		{Agent: "w-2", Role: "w"},
		{Agent: "v-1", Role: "v", CurrentTurn: "T2"},
	}
	ws := projections.OfRole(roster, "w")
	if len(ws) != 2 || ws[0].Agent != "w-1" || ws[1].Agent != "w-2" {
		t.Fatalf("OfRole(w) = %v", ws)
	}
	for _, tc := range []struct {
		a    projections.Agent
		want int
	}{{roster[0], 3}, {roster[1], 0}, {roster[2], 1}} {
		if got := tc.a.Open(); got != tc.want {
			t.Errorf("%s: Open() = %d, want %d", tc.a.Agent, got, tc.want)
		}
	}
}
