package orchestrator_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/orchestrator"
)

// A slice takes the rollups of a task's needs first, then explicit keys,
// then tag matches newest first, whole items within the budget.
func ExampleSelect() {
	s := orchestrator.NewStore()
	s.Put(orchestrator.Item{Key: "spec", Tags: []string{"api"}, Text: "GET /v1/items", Seq: 1})
	s.Put(orchestrator.Item{Key: "style", Tags: []string{"api"}, Text: "use snake_case everywhere, always", Seq: 2})
	s.Put(orchestrator.Item{Key: "rollup:design", Tags: []string{"rollup"}, Text: "two endpoints", Seq: 3})

	sl := orchestrator.Select(s, orchestrator.Selector{Needs: []string{"design"}, Tags: []string{"api"}}, 30)
	fmt.Println(sl.Keys(), sl.Bytes, "truncated:", sl.Truncated)
	fmt.Println(orchestrator.Prompt("Implement the endpoints.", sl))
	// Output:
	// [rollup:design spec] 26 truncated: [style]
	// Implement the endpoints.
	//
	// <context key="rollup:design" tags="rollup">
	// two endpoints
	// </context>
	// <context key="spec" tags="api">
	// GET /v1/items
	// </context>
}

// The orchestrator imports events, lifecycle and projections only
// (DESIGN.md's component table): adapters live in cmd.
func TestImportsStayWithinTheAllowList(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "github.com/fleetd/fleetd/orchestrator").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/fleetd/fleetd/events": true, "github.com/fleetd/fleetd/lifecycle": true, "github.com/fleetd/fleetd/projections": true,
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/fleetd/fleetd/") && !allowed[imp] {
			t.Errorf("orchestrator imports %s", imp)
		}
	}
}
