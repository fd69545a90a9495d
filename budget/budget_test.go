package budget_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// rolesFile: role w shares 10 USD a day; each of its agents may use
// 1,000 tokens an hour.
func rolesFile(t *testing.T) roles.Config {
	t.Helper()
	c, err := roles.Parse([]byte(`{"roles": {"w": {"budget": {"usd_per_day": 10}, "agent_budget": {"tokens_per_hour": 1000}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type fabric struct {
	*fleettest.Fleet
	now time.Time
}

func newFabric(t *testing.T, agents ...string) *fabric {
	f := &fabric{Fleet: fleettest.New(t), now: t0}
	for _, a := range agents {
		f.append(t, a, events.AgentRegistered{Agent: a, Host: "h1", Role: "w"})
	}
	return f
}

func (f *fabric) append(t *testing.T, subject string, d events.Data) {
	t.Helper()
	ack, err := f.Log.Append(context.Background(), events.Event{Subject: subject, Time: f.now, Data: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
}

func (f *fabric) reply(t *testing.T, agent string, tokens int64, usd float64) {
	t.Helper()
	f.append(t, agent, events.AgentReplied{Reply: "ok", Tokens: events.Tokens{Out: tokens}, CostUSD: usd})
}

func (f *fabric) checker(t *testing.T) *budget.Checker {
	return &budget.Checker{Roles: rolesFile(t), Views: f.Views, Now: func() time.Time { return f.now }}
}

func TestAnAgentIsWarnedAt80PercentAndExhaustedAt100(t *testing.T) {
	f := newFabric(t, "w-1", "w-2")
	c := f.checker(t)
	agent := func(id string) projections.Agent { a, _ := f.Views.Agent(id); return a }

	f.reply(t, "w-1", 700, 1)
	if st := c.Agent(agent("w-1")); st != nil {
		t.Errorf("at 70%% of its tokens: %v, want no budget state", st)
	}
	f.now = t0.Add(7 * time.Minute)
	f.reply(t, "w-1", 100, 1)
	st := c.Agent(agent("w-1"))
	if st == nil || st.State != projections.BudgetWarning || st.Scope != budget.ScopeAgent || st.Limit != "tokens_per_hour" {
		t.Fatalf("at 80%% of its tokens: %v, want an agent tokens_per_hour warning", st)
	}
	f.reply(t, "w-1", 300, 1)
	st = c.Agent(agent("w-1"))
	// 1,100 tokens: under 1,000 once the 10:00 bucket (700) leaves the
	// hour, at 11:05.
	if !st.Exhausted() || !st.FreesAt.Equal(t0.Add(65*time.Minute)) {
		t.Fatalf("at 110%%: %v, want exhausted until 11:05", st)
	}
	if st := c.Agent(agent("w-2")); st != nil {
		t.Errorf("w-2 used nothing of its own and 30%% of the role's, but stands %v", st)
	}
	if st := c.Role("w"); st.Exhausted() {
		t.Errorf("the role has an agent with budget left, but stands %v", st)
	}
	// After the window the agent may work again.
	f.now = t0.Add(65 * time.Minute)
	if st := c.Agent(agent("w-1")); st.Exhausted() {
		t.Errorf("at 11:05: %v, want budget again", st)
	}
}

func TestARoleIsOutOfBudgetWhenItsSharedBudgetOrEveryAgentIs(t *testing.T) {
	f := newFabric(t, "w-1", "w-2")
	c := f.checker(t)
	f.reply(t, "w-1", 1000, 0)
	f.now = t0.Add(30 * time.Minute)
	f.reply(t, "w-2", 1000, 0)
	st := c.Role("w")
	if !st.Exhausted() || st.Scope != budget.ScopeAgent || st.Of != "w-1" || !st.FreesAt.Equal(t0.Add(65*time.Minute)) {
		t.Fatalf("both agents spent: %v, want exhausted until w-1 frees at 11:05", st)
	}
	// The shared budget: 10 USD a day, used from either agent.
	f.now = t0.Add(2 * time.Hour)
	f.reply(t, "w-1", 0, 6)
	f.reply(t, "w-2", 0, 4)
	st = c.Role("w")
	if !st.Exhausted() || st.Scope != budget.ScopeRole || st.Limit != "usd_per_day" || !st.FreesAt.Equal(t0.Add(27*time.Hour)) {
		t.Fatalf("10 of 10 USD: %v, want the role exhausted until 13:00 tomorrow", st)
	}
	a, _ := f.Views.Agent("w-2")
	if st := c.Agent(a); !st.Exhausted() || st.Scope != budget.ScopeRole {
		t.Errorf("an agent of a role out of budget stands %v", st)
	}
	if got := c.Exhausted(); len(got) != 1 || got[0].Of != "w" {
		t.Errorf("out of budget: %v, want the role", got)
	}
}

// Two hosts look at the same budgets at once: each warning is written
// once, and only the host that owns an agent writes the agent's.
func TestEveryCrossingIsWarnedOnceFleetWide(t *testing.T) {
	f := newFabric(t, "w-1")
	f.reply(t, "w-1", 850, 8.5)
	warners := []*budget.Warner{
		{Log: f.Log, Views: f.Views.(budget.WarnViews), Checker: f.checker(t), Host: "h1"},
		{Log: f.Log, Views: f.Views.(budget.WarnViews), Checker: f.checker(t), Host: "h2"},
	}
	check := func() {
		var wg sync.WaitGroup
		for _, w := range warners {
			wg.Go(func() {
				if err := w.Check(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	check()
	check()
	f.now = t0.Add(time.Minute)
	f.reply(t, "w-1", 200, 2) // 105%
	check()
	check()

	type key struct {
		subject string
		percent int
	}
	got := map[key]int{}
	for ev, err := range f.Log.Read(context.Background(), events.Query{Subjects: []string{"fleet.*.*.budget_warning"}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case events.AgentBudgetWarning:
			got[key{"agent " + ev.Subject + " " + d.Limit, d.Percent}]++
			if ev.Source == "" {
				t.Error("no source")
			}
		case events.RoleBudgetWarning:
			got[key{"role " + ev.Subject + " " + d.Limit, d.Percent}]++
		}
	}
	want := map[key]int{
		{"agent w-1 tokens_per_hour", 80}: 1, {"agent w-1 tokens_per_hour", 100}: 1,
		{"role w usd_per_day", 80}: 1, {"role w usd_per_day", 100}: 1,
	}
	if len(got) != len(want) {
		t.Errorf("warnings %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v warned %d times, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

// Admit, the queue's gate, refuses a turn for an agent out of its own
// budget or its role's, and a role turn while the role is out, unless the
// role queues turns (budget_queue: the router holds them); an agent the
// roster does not know is not the budget's to judge.
func TestAdmitRefusesWhatIsOutOfBudgetSayingWhenItFrees(t *testing.T) {
	f := newFabric(t, "w-1", "w-2")
	c := f.checker(t)
	f.reply(t, "w-1", 1100, 1)
	admit := func(to string) error {
		t.Helper()
		target, err := turns.ParseTarget(to)
		if err != nil {
			t.Fatal(err)
		}
		return c.Admit(target)
	}
	err := admit("w-1")
	be, ok := errors.AsType[*turns.BudgetError](err)
	if !ok || be.FreesAt.IsZero() || !strings.Contains(err.Error(), "agent w-1 is out of budget: agent w-1 tokens_per_hour") {
		t.Fatalf("w-1 at 1,100 of 1,000 tokens: %v, want a BudgetError with its limit and frees_at", err)
	}
	for _, to := range []string{"w-2", "role:w", "ghost"} {
		if err := admit(to); err != nil {
			t.Errorf("%s: %v, want admitted", to, err)
		}
	}
	f.reply(t, "w-2", 1, 10) // the role's 10 USD a day
	for _, to := range []string{"w-2", "role:w"} {
		if err := admit(to); !errors.Is(err, turns.ErrBudgetExhausted) || !strings.Contains(err.Error(), "role w usd_per_day") {
			t.Errorf("%s with the role's budget spent: %v, want refused on role w usd_per_day", to, err)
		}
	}
	queued := c.Roles.Roles["w"]
	queued.BudgetQueue = true
	c.Roles.Roles["w"] = queued
	if err := admit("role:w"); err != nil {
		t.Errorf("role:w with budget_queue: %v, want admitted (held by the router)", err)
	}
}
