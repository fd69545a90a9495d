package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// fleetd roster marks an agent out of budget in its status and says,
// under the table, why the fleet is degraded.
func TestRosterShowsBudgetsAndWhyHealthIsDegraded(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	f.Register("w-2", "w")
	f.MustAppend(events.Event{Subject: "w-2", Data: events.AgentExited{Pane: "p-w-2", Reason: "pane_exited"}})
	ack := f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentReplied{Reply: "ok", Tokens: events.Tokens{In: 15, Out: 5}}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	rc, err := roles.Parse([]byte(`{"roles": {"w": {"agent_budget": {"tokens_per_hour": 10}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := leadshim.New(leadshim.Config{Log: f.Log, Views: f.Views, NC: f.NATS.NC, Roles: rc, Budgets: &budget.Checker{Roles: rc, Views: f.Views}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)

	var out bytes.Buffer
	if err := (&RosterCmd{listing: listing{out: &out}}).Run(fleettest.Ctx(t), &Globals{URL: hs.URL}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"OUT OF BUDGET (agent tokens_per_hour) until ", "health: degraded", "agent w-2 exited", "out of budget: agent w-1 tokens_per_hour at 200%"} {
		if !strings.Contains(got, want) {
			t.Errorf("fleetd roster lacks %q:\n%s", want, got)
		}
	}
}
