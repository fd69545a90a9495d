package roles_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/roles"
)

func TestABudgetIsReadWithItsLimitsInOrder(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles": {"w-claude": {
		"budget": {"usd_per_day": 20, "tokens_per_hour": 2000000},
		"agent_budget": {"usd_per_hour": 2},
		"budget_queue": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Get("w-claude")
	if err != nil {
		t.Fatal(err)
	}
	if !r.BudgetQueue {
		t.Error("budget_queue was not read")
	}
	got := r.Budget.Limits()
	want := []roles.Limit{
		{Name: "tokens_per_hour", Window: time.Hour, Max: 2_000_000},
		{Name: "usd_per_day", Window: 24 * time.Hour, Max: 20, USD: true},
	}
	if len(got) != len(want) {
		t.Fatalf("limits %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("limit %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if a := r.AgentBudget.Limits(); len(a) != 1 || a[0].Name != "usd_per_hour" || a[0].Max != 2 {
		t.Errorf("agent budget limits %+v", a)
	}
	var none *roles.Budget
	if l := none.Limits(); l != nil {
		t.Errorf("a role without a budget has limits %+v", l)
	}
}

func TestABadBudgetIsRefusedWithEveryProblem(t *testing.T) {
	_, err := roles.Parse([]byte(`{"roles": {
		"a": {"budget": {"usd_per_day": -1}},
		"b": {"agent_budget": {}},
		"c": {"budget_queue": true}}}`))
	if err == nil {
		t.Fatal("a negative limit, an empty budget and budget_queue without a budget were taken")
	}
	for _, want := range []string{`role "a": budget limits must not be negative`, `role "b": agent_budget sets no limit`, `role "c": budget_queue needs a budget`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
