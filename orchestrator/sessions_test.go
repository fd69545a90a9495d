package orchestrator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
)

// turn sends one message through the shim's path and waits for its reply.
func turn(t *testing.T, f *fleet, to, text string) string {
	t.Helper()
	s := orchestrator.NewLogSender(f.log, f.views)
	id, err := s.Send(f.ctx, orchestrator.Message{To: to, Text: text, From: "test"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Wait(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Reply
}

func waitAgent(t *testing.T, f *fleet, agent string, ok func(projections.Agent) bool) {
	t.Helper()
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, func() error {
		a, known := f.views.Agent(agent)
		if !known || !ok(a) {
			return fmt.Errorf("agent %s = %+v", agent, a)
		}
		return nil
	})
}

func TestIdleReapedSessionResumesByNameWithItsClaudeSessionID(t *testing.T) {
	f := newFleet(t, worker)
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	s := f.sessions(orchestrator.SessionConfig{Tier: 1, Parent: "orchestrator", IdleTTL: time.Hour,
		Now: func() time.Time { return *now.Load() }})

	b, err := s.Ensure(f.ctx, orchestrator.SessionSpec{Name: "main-a"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Agent != "main-a-1" || !b.Spawned || b.Resumed {
		t.Fatalf("first binding = %+v", b)
	}
	if got := turn(t, f, b.Agent, "hello"); got != "done: hello" {
		t.Fatalf("reply = %q", got)
	}
	waitAgent(t, f, b.Agent, projections.Agent.Ready)
	claudeID := f.views.Sessions()[0].SessionID
	if claudeID == "" {
		t.Fatal("no Claude session id recorded")
	}

	// Not idle long enough: nothing is reaped; a second Ensure reuses it.
	if closed, err := s.ReapIdle(f.ctx); err != nil || len(closed) != 0 {
		t.Fatalf("early reap closed %v, %v", closed, err)
	}
	if again, err := s.Ensure(f.ctx, orchestrator.SessionSpec{Name: "main-a"}); err != nil || again.Agent != "main-a-1" || again.Spawned {
		t.Fatalf("live session rebinding = %+v, %v", again, err)
	}

	// Past the TTL the pane is closed, the session stays resumable.
	later := start.Add(2 * time.Hour)
	now.Store(&later)
	closed, err := s.ReapIdle(f.ctx)
	if err != nil || !slices.Equal(closed, []string{"main-a"}) {
		t.Fatalf("reap closed %v, %v", closed, err)
	}
	waitAgent(t, f, "main-a-1", func(a projections.Agent) bool { return a.Exited })
	if row, _ := s.Session("main-a"); row.State != "closed" || row.Resume != claudeID {
		t.Fatalf("reaped session = %+v, want closed and resumable as %s", row, claudeID)
	}

	// Resumed by name: a new pane continues the same Claude conversation.
	r, err := s.Ensure(f.ctx, orchestrator.SessionSpec{Name: "main-a"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Agent != "main-a-2" || !r.Resumed || r.Resume != claudeID || r.Previous != "main-a-1" {
		t.Errorf("resumed binding = %+v, want main-a-2 resuming %s", r, claudeID)
	}
	spawns, closes := f.spawner.recorded()
	if len(spawns) != 2 || spawns[0].Resume != "" || spawns[1].Resume != claudeID || spawns[1].Session != "main-a" {
		t.Errorf("spawns = %+v, want the second to resume %s", spawns, claudeID)
	}
	if !slices.Equal(closes, []string{"main-a-1"}) {
		t.Errorf("closes = %v", closes)
	}
	if got := turn(t, f, r.Agent, "again"); got != "done: again" {
		t.Errorf("reply after resume = %q", got)
	}
	if row, _ := s.Session("main-a"); row.SessionID != claudeID || row.Turns != 2 {
		t.Errorf("session after resume = %+v, want the same Claude session with both turns", row)
	}
}

func TestBusySessionIsNotReaped(t *testing.T) {
	gate := make(chan struct{})
	f := newFleet(t, func(ctx context.Context, agent, role string, tr lifecycle.Turn) string {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return "late"
	})
	defer close(gate)
	s := f.sessions(orchestrator.SessionConfig{IdleTTL: time.Millisecond,
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	b, err := s.Ensure(f.ctx, orchestrator.SessionSpec{Name: "main-a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrator.NewLogSender(f.log, f.views).Send(f.ctx, orchestrator.Message{To: b.Agent, Text: "long job"}); err != nil {
		t.Fatal(err)
	}
	waitAgent(t, f, b.Agent, func(a projections.Agent) bool { return a.CurrentTurn != "" })
	if closed, err := s.ReapIdle(f.ctx); err != nil || len(closed) != 0 {
		t.Errorf("reaped a session with a turn in flight: %v, %v", closed, err)
	}
}

func TestSessionPastItsContextCapGetsAFreshSessionWithASlice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cap       int64
		wantAgent string
		fresh     bool
	}{
		{name: "under the cap the session continues", cap: 100000, wantAgent: "main-a-1"},
		{name: "past the cap a fresh session starts, once", cap: 300, wantAgent: "main-a-2", fresh: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, worker)
			s := f.sessions(orchestrator.SessionConfig{Tier: 1, Parent: "orchestrator"})
			plan := orchestrator.Plan{
				Goal:     "g",
				Sessions: []orchestrator.SessionSpec{{Name: "main-a", Cap: tc.cap}},
				Context:  []orchestrator.ContextItem{{Key: "notes", Text: "keep these"}},
				Tasks: []orchestrator.Task{
					{ID: "t1", To: "session:main-a", Instructions: "a long first task\n" + strings.Repeat("x", 400)},
					{ID: "t2", To: "session:main-a", Instructions: "second task", Needs: []string{"t1"}, Context: orchestrator.ContextSpec{Keys: []string{"notes"}}},
					// The fresh conversation is under its cap: t3 stays on it.
					{ID: "t3", To: "session:main-a", Instructions: "third task", Needs: []string{"t2"}},
				},
			}
			if _, err := f.orchestrator(orchestrator.Config{Sessions: s}).Run(f.ctx, plan, "job5"); err != nil {
				t.Fatal(err)
			}
			spawns, closes := f.spawner.recorded()
			var agents []string
			for _, sp := range spawns {
				agents = append(agents, sp.Agent)
				if sp.Resume != "" {
					t.Errorf("spawn %s resumed %s, want a fresh conversation", sp.Agent, sp.Resume)
				}
			}
			want := []string{"main-a-1"}
			if tc.fresh {
				want = append(want, "main-a-2")
				if !slices.Equal(closes, []string{"main-a-1"}) {
					t.Errorf("closes = %v, want the capped pane closed", closes)
				}
			}
			if !slices.Equal(agents, want) {
				t.Errorf("spawned %v, want %v", agents, want)
			}
			// t2 went to the expected agent with its slice: t1's rollup and
			// the notes, not t1's conversation.
			var sliced events.JobSliced
			for _, ev := range f.all("fleet.job.job5.sliced") {
				if d := ev.Data.(events.JobSliced); d.Task == "t2" {
					sliced = d
				}
			}
			if sliced.Agent != tc.wantAgent || sliced.Session != "main-a" || !slices.Equal(sliced.Items, []string{"rollup:t1", "notes"}) {
				t.Errorf("t2 sliced = %+v, want agent %s with rollup:t1 and notes", sliced, tc.wantAgent)
			}
			var tasks []string
			for _, ev := range f.all("fleet.agent." + tc.wantAgent + ".queued") {
				q := ev.Data.(events.AgentQueued)
				tasks = append(tasks, q.Task)
				if _, blocks := parsePrompt(q.Text); q.Task == "t2" && !slices.Equal(keysOf(blocks), sliced.Items) {
					t.Errorf("t2 turn on %s carries %v, sliced %v", tc.wantAgent, keysOf(blocks), sliced.Items)
				}
			}
			wantTasks := []string{"t1", "t2", "t3"}
			if tc.fresh {
				wantTasks = []string{"t2", "t3"}
			}
			if !slices.Equal(tasks, wantTasks) {
				t.Errorf("turns on %s = %v, want %v", tc.wantAgent, tasks, wantTasks)
			}
		})
	}
}

func TestOrphansAreClosedOwnedAgentsAreNot(t *testing.T) {
	f := newFleet(t, worker)
	s := f.sessions(orchestrator.SessionConfig{Tier: 1, Parent: "orchestrator"})
	if _, err := s.Ensure(f.ctx, orchestrator.SessionSpec{Name: "main-a"}); err != nil {
		t.Fatal(err)
	}
	// A crashed orchestrator's manager had moved session main-b on to a
	// second incarnation while the first was still up: main-b-1 is an
	// orphan. main-a-1 is owned; a lead's own spawn (no session) and an
	// adopted pane are never reaped; w-9 is an orphan of another scope.
	for _, sp := range []orchestrator.SpawnSpec{
		{Agent: "main-b-1", Role: "main", Tier: 1, Parent: "orchestrator", Session: "main-b"},
		{Agent: "main-b-2", Role: "main", Tier: 1, Parent: "orchestrator", Session: "main-b"},
		{Agent: "w-manual", Role: "worker", Tier: 1, Parent: "orchestrator"},
		{Agent: "w-9", Role: "worker", Tier: 2, Parent: "someone-else", Session: "w9"},
		{Agent: "w-10", Role: "worker", Tier: 2, Parent: "someone-else", Session: "w9"},
	} {
		if err := f.spawner.Spawn(f.ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.log.Append(f.ctx, events.Event{Subject: "human-1", Data: events.AgentRegistered{Agent: "human-1", Tier: 1, Parent: "orchestrator", Origin: "adopted"}}); err != nil {
		t.Fatal(err)
	}
	waitAgent(t, f, "human-1", func(projections.Agent) bool { return true })

	closed, err := s.ReapOrphans(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(closed, []string{"main-b-1"}) {
		t.Errorf("reaped %v, want only main-b-1 (w-9 is another manager's scope)", closed)
	}
	waitAgent(t, f, "main-b-1", func(a projections.Agent) bool { return a.Exited })
	// A gateway's reaper closes only its own host's panes.
	other := f.sessions(orchestrator.SessionConfig{AllTiers: true, Host: "elsewhere"})
	if closed, err := other.ReapOrphans(f.ctx); err != nil || len(closed) != 0 {
		t.Errorf("another host's reaper closed %v, %v; want nothing", closed, err)
	}
	all := f.sessions(orchestrator.SessionConfig{AllTiers: true, Host: "test"})
	if closed, err := all.ReapOrphans(f.ctx); err != nil || !slices.Equal(closed, []string{"w-9"}) {
		t.Errorf("fleet-wide reaper closed %v, %v; want w-9", closed, err)
	}
	if _, ok := s.Resolve("main-a"); !ok {
		t.Error("owned session main-a was reaped")
	}
}
