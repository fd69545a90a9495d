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
