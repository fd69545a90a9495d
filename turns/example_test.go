package turns_test

import (
	"errors"
	"fmt"

	"github.com/fleetd/fleetd/turns"
)

// A "to" names an agent, a role or an orchestrator session.
func ExampleParseTarget() {
	for _, to := range []string{"w-claude-1", "role:w-local", "session:main-a", "role:W!"} {
		t, err := turns.ParseTarget(to)
		if te, ok := errors.AsType[*turns.TargetError](err); ok {
			fmt.Printf("%s: refused as a bad %s\n", to, te.Kind)
			continue
		}
		fmt.Printf("%s: %s %s\n", to, t.Kind, t.Name)
	}
	// Output:
	// w-claude-1: agent w-claude-1
	// role:w-local: role w-local
	// session:main-a: session main-a
	// role:W!: refused as a bad role
}

// What is typed is the text with control sequences removed and line ends
// made LF; the account says what was removed.
func ExampleCheckText() {
	text, norm, err := turns.CheckText("fix the \x1b[31mred\x1b[0m test\r\n", "")
	fmt.Printf("%q %+v %v\n", text, norm, err)
	_, _, err = turns.CheckText("\x1b[2J", "")
	fmt.Println(err)
	// Output:
	// "fix the red test\n" {ControlSequences:2 CarriageReturns:1 RemovedBytes:10} <nil>
	// empty text once control sequences are removed
}
