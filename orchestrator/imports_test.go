package orchestrator_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The orchestrator imports events, lifecycle, projections, jobs and turns only
// (DESIGN.md's component table): adapters live in cmd.
func TestImportsStayWithinTheAllowList(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "github.com/fleetd/fleetd/orchestrator").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/fleetd/fleetd/events": true, "github.com/fleetd/fleetd/lifecycle": true, "github.com/fleetd/fleetd/projections": true,
		"github.com/fleetd/fleetd/jobs": true, "github.com/fleetd/fleetd/turns": true,
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/fleetd/fleetd/") && !allowed[imp] {
			t.Errorf("orchestrator imports %s", imp)
		}
	}
}
