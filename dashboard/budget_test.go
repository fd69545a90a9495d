package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/projections"
)

// budgetsOf is a dashboard.Budgets with fixed answers per agent.
type budgetsOf map[string]*projections.BudgetState

func (b budgetsOf) Agent(a projections.Agent) *projections.BudgetState { return b[a.Agent] }

// The live fleet view says who is near or out of budget.
func TestTheFleetViewShowsBudgets(t *testing.T) {
	f := fleettest.New(t)
	for _, a := range []string{"w-1", "w-2", "w-3"} {
		f.Register(a, "w")
	}
	_, base := serve(t, f, func(c *dashboard.Config) {
		c.Budgets = budgetsOf{
			"w-1": {State: projections.BudgetWarning, Scope: "role", Of: "w", Limit: "usd_per_day", Used: 17, Max: 20},
			"w-2": {State: projections.BudgetExhausted, Scope: "agent", Of: "w-2", Limit: "tokens_per_hour", Used: 1200, Max: 1000},
		}
	})
	status, body := get(t, base+"/ui/view")
	if status != http.StatusOK {
		t.Fatalf("fleet view: %d %s", status, body)
	}
	row := func(agent string) string {
		_, after, _ := strings.Cut(body, `id="agent-`+agent+`"`)
		r, _, _ := strings.Cut(after, "</tr>")
		return r
	}
	for agent, want := range map[string]string{"w-1": "budget 85%", "w-2": "out of budget"} {
		if !strings.Contains(row(agent), want) {
			t.Errorf("the row of %s lacks %q: %s", agent, want, row(agent))
		}
	}
	if r := row("w-3"); strings.Contains(r, "budget") {
		t.Errorf("w-3 is within budget, but its row says: %s", r)
	}
}
