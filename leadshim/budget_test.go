package leadshim_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/router"
)

// budgetShim serves f with the budgets of rolesJSON, judged at clk.
func budgetShim(t *testing.T, f *fleettest.Fleet, rolesJSON string, clk *fleettest.Clock) string {
	t.Helper()
	rc := mustRoles(t, rolesJSON)
	_, base := newShim(t, f, func(c *leadshim.Config) {
		c.Roles = rc
		c.Now = clk.Now
		c.Budgets = &budget.Checker{Roles: rc, Views: f.Views, Now: clk.Now}
	})
	return base
}

func mustRoles(t *testing.T, rolesJSON string) roles.Config {
	t.Helper()
	rc, err := roles.Parse([]byte(rolesJSON))
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// postFull posts a send and returns the status, Retry-After and body.
func postFull(t *testing.T, base, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/message", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, b := do(t, http.DefaultClient, req)
	return res.StatusCode, res.Header.Get("Retry-After"), []byte(b)
}

// The fake agents answer each turn with len(text)+7 tokens: with 20
// tokens an hour, the third turn would exceed the budget and is refused
// up front, saying when it frees up; once the window has moved past the
// first reply, a turn is taken again.
func TestATurnOverTheAgentsBudgetIsRefusedUntilTheWindowFreesIt(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.RunAgents(0)
	clk := fleettest.NewClock(time.Now())
	base := budgetShim(t, f, `{"roles": {"w": {"agent_budget": {"tokens_per_hour": 20}}}}`, clk)

	for i := range 2 {
		status, _, body := postFull(t, base, `{"to":"w1","text":"hello"}`)
		if status != http.StatusOK {
			t.Fatalf("turn %d at %d of 20 tokens: %d %s", i+1, 12*i, status, body)
		}
	}
	// The roster warns before a turn is refused: it shows who is out.
	status, body := fleettest.Do(t, http.MethodGet, base+"/roster", "")
	roster := mustJSON[[]projections.Agent](t, body)
	if status != http.StatusOK || len(roster) != 1 || !roster[0].Budget.Exhausted() || roster[0].Budget.Limit != "tokens_per_hour" {
		t.Fatalf("roster at 24 of 20 tokens: %d %s", status, body)
	}

	status, retry, body := postFull(t, base, `{"to":"w1","text":"one more"}`)
	e := errorOf(t, body)
	if status != http.StatusTooManyRequests || e.Code != "budget_exhausted" || e.FreesAt == nil {
		t.Fatalf("turn 3 at 24 of 20 tokens: %d %s", status, body)
	}
	frees := *e.FreesAt
	secs, err := strconv.Atoi(retry)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second < frees.Sub(clk.Now()) {
		t.Errorf("Retry-After %q, want the seconds until %v", retry, frees)
	}
	if !strings.Contains(e.Message, "tokens_per_hour") || !strings.Contains(e.Message, frees.UTC().Format(time.RFC3339)) {
		t.Errorf("the refusal does not say which limit and when: %s", e.Message)
	}
	// Up to 5 minutes late, never early: the first reply's 5-minute step
	// plus the hour.
	if d := frees.Sub(clk.Now()); d < time.Hour || d > time.Hour+5*time.Minute {
		t.Errorf("frees in %v, want within an hour and 5 minutes", d)
	}
	for _, ev := range eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w1.queued"}}) {
		if ev.Data.(events.AgentQueued).Text == "one more" {
			t.Fatal("a refused turn was queued")
		}
	}

	// Just before, still refused; at the time it said, taken.
	clk.Set(frees.Add(-time.Second))
	if status, _, body := postFull(t, base, `{"to":"w1","text":"one more"}`); status != http.StatusTooManyRequests {
		t.Errorf("a second before it frees: %d %s", status, body)
	}
	clk.Set(frees)
	if status, _, body := postFull(t, base, `{"to":"w1","text":"one more"}`); status != http.StatusOK {
		t.Errorf("once freed: %d %s", status, body)
	}
}

// A role's budget is shared by its agents: spent by one, a role turn
// and a turn for another of its agents are refused. A role with
// budget_queue queues the turn instead.
func TestARoleOutOfBudgetRefusesRoleTurnsUnlessItQueuesThem(t *testing.T) {
	f := fleettest.New(t)
	for _, a := range []struct{ id, role string }{{"r1", "r"}, {"r2", "r"}, {"q1", "q"}} {
		f.Register(a.id, a.role)
	}
	f.RunAgents(0)
	clk := fleettest.NewClock(time.Now())
	rolesJSON := `{"roles": {
		"r": {"budget": {"tokens_per_hour": 20}},
		"q": {"budget": {"tokens_per_hour": 10}, "budget_queue": true}}}`
	startRouter(t, f, mustRoles(t, rolesJSON))
	base := budgetShim(t, f, rolesJSON, clk)

	if status, _, body := postFull(t, base, `{"to":"r1","text":"hello hello"}`); status != http.StatusOK { // 18 tokens
		t.Fatalf("first turn: %d %s", status, body)
	}
	// 18 of 20: a warning in the roster, for every agent of the role.
	_, body := fleettest.Do(t, http.MethodGet, base+"/roster", "")
	for _, a := range mustJSON[[]projections.Agent](t, body) {
		if a.Role == "r" && (a.Budget == nil || a.Budget.State != projections.BudgetWarning || a.Budget.Scope != "role") {
			t.Errorf("%s at 90%% of its role's budget: %+v", a.Agent, a.Budget)
		}
	}
	if status, _, body := postFull(t, base, `{"to":"role:r","text":"hi"}`); status != http.StatusOK {
		t.Fatalf("second turn: %d %s", status, body)
	}
	for _, to := range []string{"role:r", "r2"} {
		status, _, body := postFull(t, base, `{"to":"`+to+`","text":"hi"}`)
		if e := errorOf(t, body); status != http.StatusTooManyRequests || e.Code != "budget_exhausted" || !strings.Contains(e.Message, "role r tokens_per_hour") {
			t.Errorf("to %s with the role's budget spent: %d %s", to, status, body)
		}
	}

	if status, _, body := postFull(t, base, `{"to":"role:q","text":"hello"}`); status != http.StatusOK {
		t.Fatalf("q's first turn: %d %s", status, body)
	}
	if status, _, body := postFull(t, base, `{"to":"role:q","text":"waits","wait":false}`); status != http.StatusAccepted {
		t.Errorf("a budget_queue role out of budget: %d %s, want 202 (queued)", status, body)
	}
}

// /healthz is still 200 while part of the fleet is down, but says
// degraded and why: an agent that exited, one that needs a person, a
// budget exhausted. /metrics counts them.
func TestHealthIsDegradedWhileAgentsAreDeadOrOutOfBudget(t *testing.T) {
	f := fleettest.New(t)
	for _, a := range []string{"w1", "w2", "w3"} {
		f.Register(a, "w")
	}
	clk := fleettest.NewClock(time.Now())
	base := budgetShim(t, f, `{"roles": {"w": {"agent_budget": {"usd_per_hour": 1}}}}`, clk)
	health := func() leadshim.Health {
		t.Helper()
		status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "")
		if status != http.StatusOK {
			t.Fatalf("healthz %d %s", status, body)
		}
		return mustJSON[leadshim.Health](t, body)
	}
	if h := health(); h.Status != "ok" || len(h.Reasons) != 0 {
		t.Fatalf("a healthy fleet: %+v", h)
	}

	f.MustAppend(events.Event{Subject: "w1", Data: events.AgentExited{Pane: "p-w1", Reason: "pane_exited"}})
	f.MustAppend(events.Event{Subject: "w2", Data: events.AgentAttention{Reason: "composer_not_empty", Detail: "text in the prompt box"}})
	ack := f.MustAppend(events.Event{Subject: "w3", Data: events.AgentReplied{Reply: "ok", CostUSD: 1.25}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	h := health()
	all := strings.Join(h.Reasons, "\n")
	if h.Status != "degraded" || len(h.Reasons) != 3 || !strings.Contains(all, "agent w1 exited") ||
		!strings.Contains(all, "agent w2 needs attention: composer_not_empty") || !strings.Contains(all, "out of budget: agent w3 usd_per_hour") {
		t.Errorf("degraded health: %+v", h)
	}
	_, metrics := fleettest.Do(t, http.MethodGet, base+"/metrics", "")
	for _, want := range []string{"fleetd_health_degraded 1", "fleetd_agents_exited 1", "fleetd_agents_needing_attention 1", "fleetd_budgets_exhausted 1"} {
		if !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// An agent that exited long ago is no longer a fault; a budget frees.
	clk.Set(time.Now().Add(2 * time.Hour))
	if h := health(); h.Status != "degraded" || len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0], "w2 needs attention") {
		t.Errorf("two hours later: %+v", h)
	}
}

// A role with budget_queue: a turn sent while the role is out of budget
// is taken (202) and waits at the head of the role's queue — the router
// assigns it to no agent — until the budget frees; then it is answered.
func TestARoleTurnWaitsInTheQueueUntilTheBudgetFrees(t *testing.T) {
	f := fleettest.New(t)
	f.Register("q1", "q")
	f.RunAgents(0)
	clk := fleettest.NewClock(time.Now())
	rolesJSON := `{"roles": {"q": {"budget": {"tokens_per_hour": 10}, "budget_queue": true}}}`
	rc := mustRoles(t, rolesJSON)
	rt, err := router.New(router.Config{Log: f.Log, JS: f.NATS.JS, Views: f.Views, Roles: rc, Host: "h1", Poll: 100 * time.Millisecond,
		Budgets: &budget.Checker{Roles: rc, Views: f.Views, Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "router run", rt.Run)
	base := budgetShim(t, f, rolesJSON, clk)

	if status, _, body := postFull(t, base, `{"to":"role:q","text":"hello"}`); status != http.StatusOK { // 12 of 10 tokens
		t.Fatalf("first turn: %d %s", status, body)
	}
	id := postAsync(t, base, `{"to":"role:q","text":"held","wait":false}`).ID
	// The long-poll ends with the turn still queued and on no agent: the
	// agent is idle, but the role is out of budget.
	status, body := fleettest.Do(t, http.MethodGet, base+"/message/"+id+"?wait=1s", "")
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "queued" || env.Agent != "" {
		t.Fatalf("while out of budget: %d %s, want queued on no agent", status, body)
	}
	clk.Set(clk.Now().Add(time.Hour + 5*time.Minute))
	status, body = fleettest.Do(t, http.MethodGet, base+"/message/"+id+"?wait=20s", "")
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "replied" || env.Agent != "q1" {
		t.Fatalf("once the budget freed: %d %s, want replied by q1", status, body)
	}
}
