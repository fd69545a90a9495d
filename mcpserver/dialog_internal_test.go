package mcpserver

import (
	"strings"
	"testing"

	"github.com/fleetd/fleetd/projections"
)

// A main answers the dialogs of agents it spawned and of lower tiers, not
// a peer's or its lead's; a lead outside the roster answers any.
func TestWhoMayAnswerADialog(t *testing.T) {
	roster := []projections.Agent{
		{Agent: "main-a", Tier: 1}, {Agent: "main-b", Tier: 1},
		{Agent: "w-1", Tier: 0}, {Agent: "spawned", Tier: 1, Parent: "main-a"},
	}
	for _, c := range []struct {
		caller, target, refused string
	}{
		{"main-a", "w-1", ""},
		{"main-a", "spawned", ""},
		{"main-b", "spawned", "not one of your workers"},
		{"w-1", "main-a", "not one of your workers"},
		{"lead", "main-a", ""},
		{"main-a", "ghost", "no agent"},
	} {
		err := mayAnswer(roster, c.caller, c.target)
		if (c.refused == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.refused)) {
			t.Errorf("%s answers %s: %v, want refused %q", c.caller, c.target, err, c.refused)
		}
	}
}
