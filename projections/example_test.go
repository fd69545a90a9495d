package projections_test

import (
	"fmt"

	"github.com/fleetd/fleetd/projections"
)

// Session names are free text; KV keys are not. Key maps a name that
// cannot be a key to a stable encoded one and leaves the rest alone.
func ExampleKey() {
	fmt.Println(projections.Key("w-claude-1"))
	fmt.Println(projections.Key("01JF6Z0000000000000000TURN"))
	fmt.Println(projections.Key("plan job"))
	// Output:
	// w-claude-1
	// 01JF6Z0000000000000000TURN
	// _b64_cGxhbiBqb2I
}

// An agent's hook reads its own roster row with one direct get; its
// credentials allow that subject and no other read of the roster.
func ExampleRosterGetSubject() {
	fmt.Println(projections.RosterGetSubject("w-claude-1"))
	fmt.Println(projections.Buckets())
	// Output:
	// $JS.API.DIRECT.GET.KV_fleet_roster.$KV.fleet_roster.w-claude-1
	// [fleet_roster fleet_sessions fleet_turns fleet_checkpoints]
}
