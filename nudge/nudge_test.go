package nudge_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/nudge"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
)

func startNudger(t *testing.T, f *fleettest.Fleet) *inbox.Inboxes {
	t.Helper()
	boxes, err := inbox.New(inbox.Config{Log: f.Log, JS: f.NATS.JS})
	if err != nil {
		t.Fatal(err)
	}
	n, err := nudge.New(nudge.Config{Log: f.Log, Views: f.Views, Inboxes: boxes, Host: "h1",
		Roles: roles.Config{Roles: map[string]roles.Role{"main": {Inbox: true}, "w": {}}}})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "nudger", n.Run)
	return boxes
}

// nudges folds the log and returns the nudge turns of agent, in order,
// and the most that were open (not final) at once.
func nudges(t *testing.T, f *fleettest.Fleet, agent string) (all []lifecycle.Turn, mostOpen int, seqs map[string]uint64) {
	t.Helper()
	book := lifecycle.NewBook()
	open := map[string]bool{}
	seqs = map[string]uint64{}
	var order []string
	latest := map[string]lifecycle.Turn{}
	for ev, err := range f.Log.Read(fleettest.Ctx(t), events.Query{Subjects: []string{"fleet.agent." + agent + ".>"}}) {
		if err != nil {
			t.Fatal(err)
		}
		tr, ok := book.Apply(ev)
		if !ok || !tr.Nudge {
			continue
		}
		if _, seen := seqs[tr.ID]; !seen {
			seqs[tr.ID] = ev.Seq
			order = append(order, tr.ID)
		}
		latest[tr.ID] = tr
		open[tr.ID] = !tr.State.Final()
		n := 0
		for _, o := range open {
			if o {
				n++
			}
		}
		mostOpen = max(mostOpen, n)
	}
	for _, id := range order {
		all = append(all, latest[id])
	}
	return all, mostOpen, seqs
}

func post(t *testing.T, boxes *inbox.Inboxes, to, text string) inbox.Message {
	t.Helper()
	m, err := boxes.Post(fleettest.Ctx(t), inbox.Message{To: to, From: "main-z", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAMessageForAnIdleMainNudgesItOnceThroughTheTurnPath(t *testing.T) {
	f := fleettest.New(t)
	f.Register("main-a", "main")
	f.RunAgents(0, "main-a") // plays the gateway and the main's hooks
	boxes := startNudger(t, f)

	post(t, boxes, "main-a", "first")
	checkfor.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if all, _, _ := nudges(t, f, "main-a"); len(all) != 1 || all[0].State != lifecycle.StateReplied {
			return fmt.Errorf("nudges = %+v, want one, replied", all)
		}
		return nil
	})
	all, _, _ := nudges(t, f, "main-a")
	if !strings.Contains(all[0].Text, "1 new message") || !strings.Contains(all[0].Text, "inbox") || all[0].From != "fleetd" {
		t.Errorf("nudge text %q from %q, want fleetd telling it to call inbox", all[0].Text, all[0].From)
	}
	// The main did not pull: only a new message nudges it again, and never
	// while a nudge is still open.
	post(t, boxes, "main-a", "second")
	post(t, boxes, "main-a", "third")
	checkfor.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		all, _, _ := nudges(t, f, "main-a")
		for _, tr := range all {
			if !tr.State.Final() {
				return fmt.Errorf("nudge %s still %s", tr.ID, tr.State)
			}
		}
		if len(all) < 2 {
			return fmt.Errorf("%d nudges, want a second one for the new messages", len(all))
		}
		return nil
	})
	if all, most, _ := nudges(t, f, "main-a"); most != 1 || len(all) > 3 {
		t.Errorf("nudges %d, at most %d open at once; want at most one open, one per arrival at most", len(all), most)
	}
}

func TestAWorkingMainIsNudgedOnlyOnceIdle(t *testing.T) {
	f := fleettest.New(t)
	f.Register("main-a", "main")
	f.Register("w-1", "w")
	boxes := startNudger(t, f)
	working := f.MustAppend(events.Event{Subject: "main-a", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), working.Seq); err != nil {
		t.Fatal(err)
	}
	post(t, boxes, "main-a", "while you work")
	post(t, boxes, "w-1", "a worker's role does not read by pull")
	idle := f.MustAppend(events.Event{Subject: "main-a", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	checkfor.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if all, _, _ := nudges(t, f, "main-a"); len(all) != 1 {
			return fmt.Errorf("nudges = %d, want 1", len(all))
		}
		return nil
	})
	all, _, seqs := nudges(t, f, "main-a")
	if seqs[all[0].ID] < idle.Seq {
		t.Errorf("nudge queued at #%d, before the main was idle again at #%d", seqs[all[0].ID], idle.Seq)
	}
	if ws, _, _ := nudges(t, f, "w-1"); len(ws) != 0 {
		t.Errorf("worker nudged: %+v", ws)
	}
}

// followCounter is a log that counts the follows asked of it.
type followCounter struct {
	events.Log
	follows atomic.Int32
}

func (l *followCounter) Follow(ctx context.Context, q events.Query) (*events.Follower, error) {
	l.follows.Add(1)
	return l.Log.Follow(ctx, q)
}

// Without a role that reads by pull (the default roles have none) nothing
// can come due: the nudger ends at once and reads nothing of the log,
// rather than decode every agent event of the fleet on this gateway.
func TestWithoutAnInboxRoleTheNudgerReadsNothing(t *testing.T) {
	f := fleettest.New(t)
	boxes, err := inbox.New(inbox.Config{Log: f.Log, JS: f.NATS.JS})
	if err != nil {
		t.Fatal(err)
	}
	log := &followCounter{Log: f.Log}
	n, err := nudge.New(nudge.Config{Log: log, Views: f.Views, Inboxes: boxes, Host: "h1", Roles: roles.Default()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(fleettest.Ctx(t)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the nudger still runs after 10 s with no role to nudge")
	}
	if got := log.follows.Load(); got != 0 {
		t.Errorf("%d follows of the log; want none", got)
	}
}

// A nudge is a turn the model answers, so an agent out of budget is not
// nudged: its messages wait in its inbox, and it is nudged once the
// budget frees — with no event of its own to prompt it.
func TestAMainOutOfBudgetIsNudgedOnlyOnceItFrees(t *testing.T) {
	f := fleettest.New(t)
	f.Register("main-a", "main")
	f.Register("main-b", "main")
	f.RunAgents(0, "main-a", "main-b")
	clk := fleettest.NewClock(time.Now())
	rc, err := roles.Parse([]byte(`{"roles": {"main": {"inbox": true, "agent_budget": {"tokens_per_hour": 1}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	spent := f.MustAppend(events.Event{Subject: "main-a", Data: events.AgentReplied{Reply: "spent", Tokens: events.Tokens{In: 100, Out: 43}}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), spent.Seq); err != nil {
		t.Fatal(err)
	}
	boxes, err := inbox.New(inbox.Config{Log: f.Log, JS: f.NATS.JS})
	if err != nil {
		t.Fatal(err)
	}
	checker := &budget.Checker{Roles: rc, Views: f.Views, Now: clk.Now}
	n, err := nudge.New(nudge.Config{Log: f.Log, Views: f.Views, Inboxes: boxes, Host: "h1", Roles: rc, Budget: checker, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "nudger", n.Run)

	post(t, boxes, "main-a", "for a main out of budget")
	// The nudger takes events in order: once main-b's later message is
	// nudged, main-a's was considered.
	post(t, boxes, "main-b", "for a main within budget")
	waitNudges := func(agent string, want int) {
		t.Helper()
		checkfor.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
			if all, _, _ := nudges(t, f, agent); len(all) != want || !all[want-1].State.Final() {
				return fmt.Errorf("%s: nudges = %+v, want %d, the last final", agent, all, want)
			}
			return nil
		})
	}
	waitNudges("main-b", 1)
	if all, _, _ := nudges(t, f, "main-a"); len(all) != 0 {
		t.Fatalf("main-a, out of budget, was nudged: %+v", all)
	}

	frees := checker.Agent(mustAgent(t, f, "main-a")).FreesAt
	clk.Set(frees)
	// Any event wakes the nudger's loop; it is not main-a's.
	post(t, boxes, "main-b", "another")
	waitNudges("main-a", 1)
}

func mustAgent(t *testing.T, f *fleettest.Fleet, id string) projections.Agent {
	t.Helper()
	a, ok := f.Views.Agent(id)
	if !ok {
		t.Fatalf("no agent %s", id)
	}
	return a
}
