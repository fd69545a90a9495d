package projections_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

var t0 = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func fixedNow() time.Time { return at(60) }

func reg(agent, host, session string) events.Event {
	return events.Event{Subject: agent, Time: at(1), Data: events.AgentRegistered{Agent: agent, Host: host, Pane: "p1", Role: "w-local", Tier: 2,
		Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned", Session: session}}
}

func queued(agent, turn, text string) events.Event {
	return events.Event{ID: turn, Subject: agent, CorrelationID: turn, Time: at(2), Data: events.AgentQueued{From: "lead", Text: text}}
}

// cs1 is a Claude Code session id (a UUID: a named session resumes no other).
const cs1 = "4f52c1d0-9a3b-4c7e-8d21-6b0e5f7a9c13"

func TestTurnLifecycleUpdatesRosterSessionsAndTurns(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow, FlushInterval: 10 * time.Millisecond}))
	turn := events.NewULIDSource(time.Now)()

	e.append(t, reg("w1", "h1", "build"))
	e.append(t, events.Event{Subject: "w1", Time: at(1), Data: events.AgentSession{SessionID: cs1, State: "started", TranscriptPath: "/t/1.jsonl", Model: "m1"}})
	ack := e.append(t, queued("w1", turn, "write the tests"))
	waitSeq(t, p, ack.Seq)
	a, ok := p.Agent("w1")
	if !ok || a.QueueDepth != 1 || a.CurrentTurn != "" || a.Session != "build" || a.SessionID != cs1 {
		t.Fatalf("after queued: %+v %v", a, ok)
	}

	replied := make(chan lifecycle.Turn, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tu, err := p.WaitTurn(ctx, turn, func(t lifecycle.Turn) bool { return t.State.Final() })
		if err != nil {
			t.Error(err)
		}
		replied <- tu
	}()

	ack = e.append(t, events.Event{Subject: "w1", CorrelationID: turn, Time: at(3), Data: events.AgentTyped{Pane: "p1", Method: "agent.prompt"}})
	waitSeq(t, p, ack.Seq)
	if a, _ := p.Agent("w1"); a.CurrentTurn != turn || a.QueueDepth != 0 {
		t.Fatalf("after typed: current %q depth %d", a.CurrentTurn, a.QueueDepth)
	}
	e.append(t, events.Event{Subject: "w1", Time: at(4), Data: events.AgentSubmitted{Via: "hook", PromptID: "p1"}})
	reply := events.Event{Subject: "w1", Time: at(5), Data: events.AgentReplied{Reply: "done", PromptID: "p1", SessionID: cs1, Model: "m2",
		Tokens: events.Tokens{In: 100, Out: 20}, CostUSD: 0.5}}
	e.append(t, reply)

	got := <-replied
	if got.State != lifecycle.StateReplied || got.Reply != "done" || got.Agent != "w1" {
		t.Fatalf("turn: %+v", got)
	}
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		a, _ := p.Agent("w1")
		if a.CurrentTurn != "" || a.Tokens != (events.Tokens{In: 100, Out: 20}) || a.CostUSD != 0.5 {
			return fmt.Errorf("agent %+v", a)
		}
		s := p.Sessions()
		if len(s) != 1 || s[0].Name != "build" || s[0].Turns != 1 || s[0].Tokens.In != 100 || s[0].Resume != cs1 ||
			s[0].Model != "m2" || s[0].Tier != 2 || s[0].State != projections.SessionActive ||
			!s[0].IdleDeadline.Equal(at(5).Add(30*time.Minute)) {
			return fmt.Errorf("sessions %+v", s)
		}
		// The KV is the same as memory.
		kt, err := kvGet[lifecycle.Turn](e.js, projections.BucketTurns, turn)
		if err != nil || kt.State != lifecycle.StateReplied {
			return fmt.Errorf("kv turn %+v %v", kt, err)
		}
		ka, err := kvGet[projections.Agent](e.js, projections.BucketRoster, "w1")
		if err != nil || ka.Tokens.In != 100 {
			return fmt.Errorf("kv agent %+v %v", ka, err)
		}
		ks, err := kvGet[projections.Session](e.js, projections.BucketSessions, "build")
		if err != nil || ks.Turns != 1 {
			return fmt.Errorf("kv session %+v %v", ks, err)
		}
		return nil
	})
}

func TestOddEventsNeverCorruptViews(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	ids := events.NewULIDSource(time.Now)
	turn := ids()

	// A status from an agent nobody registered stays out of the roster…
	ack := e.append(t, events.Event{Subject: "w1", Time: at(1), Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}})
	waitSeq(t, p, ack.Seq)
	if len(p.Roster()) != 0 {
		t.Fatalf("roster before registration: %+v", p.Roster())
	}
	// …and shows once it registers.
	ack = e.append(t, reg("w1", "h1", ""))
	waitSeq(t, p, ack.Seq)
	if a, ok := p.Agent("w1"); !ok || a.Status != events.StatusWorking {
		t.Fatalf("after registration: %+v %v", a, ok)
	}

	// A reply before anything was typed changes no turn but its tokens count.
	ack = e.append(t, events.Event{Subject: "w1", Time: at(2), Data: events.AgentReplied{Reply: "by hand", Tokens: events.Tokens{In: 7}}})
	// A typed for an unknown turn changes nothing.
	e.append(t, events.Event{Subject: "w1", CorrelationID: ids(), Time: at(2), Data: events.AgentTyped{Pane: "p1"}})
	// An older status arriving late does not win over a newer one.
	e.append(t, events.Event{Subject: "w1", Time: at(0), Data: events.AgentStatusChanged{Status: events.StatusBlocked, Source: "herdr"}})

	e.append(t, queued("w1", turn, "hello"))
	e.append(t, events.Event{Subject: "w1", CorrelationID: turn, Time: at(3), Data: events.AgentTyped{Pane: "p1"}})
	reply := events.Event{ID: ids(), Source: "fleetd/h1/hook", Subject: "w1", CorrelationID: turn, Time: at(4),
		Data: events.AgentReplied{Reply: "hi", Tokens: events.Tokens{In: 100, Out: 10}, CostUSD: 1}}
	e.append(t, reply)
	// The same reply re-published past the dedupe window (a spool replay),
	// then the queued event re-appended under its own id.
	republish(t, e, reply)
	republish(t, e, queued("w1", turn, "hello"))
	// A second turn is typed; a replayed submitted and a replayed failure
	// without a turn id must not land on it.
	turn2 := ids()
	e.append(t, queued("w1", turn2, "second"))
	e.append(t, events.Event{Subject: "w1", CorrelationID: turn2, Time: at(6), Data: events.AgentTyped{Pane: "p1"}})
	republish(t, e, reply)
	last := republish(t, e, events.Event{Subject: "w1", CorrelationID: turn, Time: at(7), Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	waitSeq(t, p, last)

	a, _ := p.Agent("w1")
	if a.Tokens != (events.Tokens{In: 107, Out: 10}) || a.CostUSD != 1 {
		t.Errorf("tokens %+v cost %v, want in 107 out 10 cost 1 (no double count)", a.Tokens, a.CostUSD)
	}
	if a.Status != events.StatusIdle {
		t.Errorf("status %q, want idle", a.Status)
	}
	if a.CurrentTurn != turn2 || a.QueueDepth != 0 {
		t.Errorf("current %q depth %d, want %s 0", a.CurrentTurn, a.QueueDepth, turn2)
	}
	t1, _, _ := p.Turn(context.Background(), turn)
	if t1.State != lifecycle.StateReplied || t1.Reply != "hi" {
		t.Errorf("turn 1 %+v, want replied", t1)
	}
	t2, _, _ := p.Turn(context.Background(), turn2)
	if t2.State != lifecycle.StateTyped {
		t.Errorf("turn 2 %s, want typed (a replayed reply must not end it)", t2.State)
	}
	if s := p.Sessions(); len(s) != 1 || s[0].Turns != 1 || s[0].Tokens.In != 107 {
		t.Errorf("sessions %+v", s)
	}

	// An exited agent is not revived by its registration replayed; a new
	// registration does revive it.
	regEv := reg("w1", "h1", "")
	regEv.ID = ids()
	e.append(t, regEv)
	ack = e.append(t, events.Event{Subject: "w1", Time: at(8), Data: events.AgentExited{Reason: "pane_exited"}})
	last = republish(t, e, regEv)
	waitSeq(t, p, last)
	if a, _ := p.Agent("w1"); !a.Exited {
		t.Fatalf("a replayed registration revived an exited agent: %+v", a)
	}
	if s := p.Sessions(); s[0].State != projections.SessionClosed {
		t.Errorf("session of an exited agent: %q, want closed", s[0].State)
	}
	ack = e.append(t, reg("w1", "h1", ""))
	waitSeq(t, p, ack.Seq)
	if a, _ := p.Agent("w1"); a.Exited {
		t.Fatalf("a new registration did not revive: %+v", a)
	}
	if s := p.Sessions(); s[0].State != projections.SessionActive {
		t.Errorf("session after revival: %q, want active", s[0].State)
	}
}

// republish stores ev's exact envelope again without a Nats-Msg-Id, as a
// replay after the dedupe window would, and returns its sequence.
func republish(t testing.TB, e *env, ev events.Event) uint64 {
	t.Helper()
	if ev.ID == "" {
		ev.ID = events.NewULIDSource(time.Now)()
	}
	if ev.Source == "" {
		ev.Source = "fleetd/test/replay"
	}
	subj, err := ev.StreamSubject()
	if err != nil {
		t.Fatal(err)
	}
	body, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	ack, err := e.js.Publish(context.Background(), subj, body)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func TestWaitTurnAndWaitSeqHonourContext(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.WaitTurn(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV", func(lifecycle.Turn) bool { return true }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitTurn on a turn that never comes: %v", err)
	}
	if err := p.WaitSeq(ctx, p.Applied()+100); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitSeq beyond the log: %v", err)
	}
	// A waiter for a turn queued later is woken by it.
	turn := events.NewULIDSource(time.Now)()
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := p.WaitTurn(ctx, turn, func(t lifecycle.Turn) bool { return t.State == lifecycle.StateQueued })
		got <- err
	}()
	e.append(t, queued("w1", turn, "x"))
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestEndedTurnsLeaveMemoryAndAreReadFromKV(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{TurnCacheSize: 2, FlushInterval: 10 * time.Millisecond}))
	ids := events.NewULIDSource(time.Now)
	turns := endSixTurns(t, e, p, func(int) string { return ids() })
	// A queued event re-appended after its turn left memory does not open
	// the turn again.
	checkRequeueIgnored(t, e, p, turns[0])
}

// hostFold is a projection judging hosts (HostTTL 15s, a sweep every
// 5ms) on a clock the test sets, at now, with host up at 1s and agent w1
// registered on it.
func hostFold(t *testing.T, now time.Time, host string) (*env, *fleettest.Clock, *running) {
	t.Helper()
	e := newEnv(t)
	clock := fleettest.NewClock(now)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: clock.Now, HostTTL: 15 * time.Second, SweepInterval: 5 * time.Millisecond}))
	e.append(t, events.Event{Subject: host, Time: at(1), Data: events.HostUp{Host: host}})
	e.append(t, reg("w1", host, ""))
	return e, clock, p
}

func TestHostLivenessMarksAgentsStale(t *testing.T) {
	e, mu, p := hostFold(t, at(1), "h1")
	ack := e.append(t, reg("w2", "h2", ""))
	waitSeq(t, p, ack.Seq)
	stale := func(id string, want bool) func() error {
		return func() error {
			if a, _ := p.Agent(id); a.Stale != want {
				return fmt.Errorf("%s stale = %v, want %v", id, a.Stale, want)
			}
			return nil
		}
	}
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w1", false))
	// h2 never announced itself: it has HostTTL from its first agent.
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w2", false))
	if h := p.Hosts(); len(h) != 2 || h[1].Host != "h2" || !h[1].Unheard || h[0].Unheard {
		t.Fatalf("hosts %+v, want h2 unheard", h)
	}
	mu.Set(at(20)) // h1 silent for 19s, h2 never heard from for 19s…
	// …but so is the whole log: a fold that hears nothing (its reader
	// being made again) judges no host by the clock alone.
	time.Sleep(50 * time.Millisecond) // ten sweeps
	if a, _ := p.Agent("w1"); a.Stale {
		t.Fatal("with nothing folded for 19s, w1 was judged stale by the clock alone")
	}
	// The log moves on (another agent's event at 20s): h1 and h2 are
	// silent in it.
	e.append(t, events.Event{Subject: "w9", Time: at(20), Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w1", true))
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w2", true))
	// Its gateway coming up at last makes it an ordinary host.
	e.append(t, events.Event{Subject: "h2", Time: at(20), Data: events.HostUp{Host: "h2"}})
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w2", false))
	if h := p.Hosts(); h[1].Unheard || !h[1].LastBeat.Equal(at(20)) {
		t.Fatalf("h2 after its up: %+v", h[1])
	}
	e.append(t, events.Event{Subject: "h1", Time: at(19), Data: events.HostUp{Host: "h1", Heartbeat: true}})
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w1", false))
	e.append(t, events.Event{Subject: "h1", Time: at(20), Data: events.HostDown{Host: "h1"}})
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale("w1", true))
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, func() error {
		a, err := kvGet[projections.Agent](e.js, projections.BucketRoster, "w1")
		if err != nil || !a.Stale {
			return fmt.Errorf("kv %+v %v", a, err)
		}
		return nil
	})
	// An old heartbeat replayed after the down does not bring it back.
	e.append(t, events.Event{Subject: "h1", Time: at(18), Data: events.HostUp{Host: "h1", Heartbeat: true}})
	ack = e.append(t, events.Event{Subject: "w1", Time: at(21), Data: events.AgentStatusChanged{Status: events.StatusIdle}})
	waitSeq(t, p, ack.Seq)
	if err := stale("w1", true)(); err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsBadOptionsAndSecondRun(t *testing.T) {
	e := newEnv(t)
	bad := projections.New(e.log, e.js, projections.Options{TurnCacheSize: -1, HostTTL: -time.Second, BucketPrefix: "a b"})
	err := bad.Run(context.Background())
	if !errors.Is(err, projections.ErrInvalidOptions) {
		t.Fatalf("bad options: %v", err)
	}
	for _, want := range []string{"turn cache", "host ttl", "bucket prefix"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	p := start(t, projections.New(e.log, e.js, projections.Options{}))
	if err := p.Run(context.Background()); !errors.Is(err, projections.ErrRunning) {
		t.Errorf("second Run: %v", err)
	}
	if err := p.Rebuild(context.Background()); !errors.Is(err, projections.ErrRunning) {
		t.Errorf("Rebuild while running: %v", err)
	}
	if err := p.stop(); err != nil {
		t.Errorf("Run after Close: %v", err)
	}
	if err := p.Run(context.Background()); !errors.Is(err, projections.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	p.Close() // idempotent
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// An agent's worktree on the roster: where it is from its registration,
// where its branch stood after each reply, and what became of it at its
// exit; a new registration starts over.
func TestTheRosterShowsEachAgentsWorktree(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow, FlushInterval: 10 * time.Millisecond}))
	wt := events.Worktree{Repo: "/src", Path: "/wt/w1", Branch: "fleet/w1", Base: "main", Head: "c0"}
	r := reg("w1", "h1", "")
	d := r.Data.(events.AgentRegistered)
	d.Worktree, d.Sandbox = wt, "bwrap"
	r.Data = d
	e.append(t, r)
	ack := e.append(t, events.Event{Subject: "w1", Time: at(2), Data: events.AgentReplied{Reply: "one",
		Worktree: events.Worktree{Branch: "fleet/w1", Head: "c1", Ahead: 1, Dirty: 2}}})
	waitSeq(t, p, ack.Seq)
	want := wt
	want.Head, want.Ahead, want.Dirty = "c1", 1, 2
	if a, _ := p.Agent("w1"); a.Worktree != want || a.Sandbox != "bwrap" {
		t.Errorf("after a reply: %+v sandbox %q, want %+v", a.Worktree, a.Sandbox, want)
	}
	// A reply from an agent without a worktree changes nothing.
	ack = e.append(t, events.Event{Subject: "w1", Time: at(3), Data: events.AgentReplied{Reply: "two"}})
	waitSeq(t, p, ack.Seq)
	if a, _ := p.Agent("w1"); a.Worktree != want {
		t.Errorf("after a reply without a worktree: %+v, want %+v", a.Worktree, want)
	}
	ack = e.append(t, events.Event{Subject: "w1", Time: at(4), Data: events.AgentExited{Reason: "pane_exited",
		Worktree: events.Worktree{Path: "/wt/w1", Kept: "2 uncommitted files"}}})
	waitSeq(t, p, ack.Seq)
	want.Kept = "2 uncommitted files"
	if a, _ := p.Agent("w1"); a.Worktree != want || !a.Exited {
		t.Errorf("after the exit: %+v, want %+v", a.Worktree, want)
	}
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if ka, err := kvGet[projections.Agent](e.js, projections.BucketRoster, "w1"); err != nil || ka.Worktree != want {
			return fmt.Errorf("kv agent's worktree %+v %v", ka.Worktree, err)
		}
		return nil
	})
	r.ID, r.Time = "", at(5)
	ack = e.append(t, r)
	waitSeq(t, p, ack.Seq)
	if a, _ := p.Agent("w1"); a.Worktree != wt || a.Exited {
		t.Errorf("registered again: %+v, want %+v", a.Worktree, wt)
	}
}

// A live fold reads the turns bucket for a queued event only when its
// turn may be there without memory knowing it; ids minted well after the
// projector was born are not read — unless a turn at least as young was
// pushed out of the cache, which is what a re-appended queued event of
// such a turn needs.
func TestYoungTurnsPushedOutOfMemoryStillStayEnded(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{TurnCacheSize: 2, FlushInterval: 10 * time.Millisecond}))
	// Ids minted ten minutes ahead: younger than the projector by far.
	future := time.Now().Add(10 * time.Minute)
	turns := endSixTurns(t, e, p, func(i int) string {
		return ulid.MustNew(ulid.Timestamp(future.Add(time.Duration(i)*time.Millisecond)), ulid.DefaultEntropy()).String()
	})
	checkRequeueIgnored(t, e, p, turns[0])
}

func TestTheRosterCountsRestartsAndShowsARestartingAgentNotReady(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, events.Event{Subject: "h1", Time: fixedNow(), Data: events.HostUp{Host: "h1"}})
	e.append(t, reg("w1", "h1", ""))
	e.append(t, events.Event{Subject: "w1", Time: at(1), Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	e.append(t, events.Event{Subject: "w1", Time: at(2), Data: events.AgentSession{SessionID: "s1", State: "ended", Reason: "died"}})
	ack := e.append(t, events.Event{Subject: "w1", Time: at(3), Data: events.AgentRestart{State: events.RestartRestarting, Attempt: 1, Cause: "died"}})
	waitSeq(t, p, ack.Seq)
	if a, _ := p.Agent("w1"); !a.Restarting || a.Restarts != 0 || a.Ready() {
		t.Errorf("while restarting: %+v", a)
	}
	e.append(t, reg("w1", "h1", ""))
	restarted := events.Event{ID: events.NewULIDSource(time.Now)(), Subject: "w1", Time: at(4), Data: events.AgentRestart{State: events.RestartRestarted, Attempt: 1, Pane: "p2"}}
	e.append(t, restarted)
	last := republish(t, e, restarted) // counted once
	waitSeq(t, p, last)
	if a, _ := p.Agent("w1"); a.Restarting || a.Restarts != 1 || a.SessionEnded || !a.Ready() {
		t.Errorf("after the restart: %+v", a)
	}
}

// The roster shows each agent's kind: its registration's, and Claude Code
// for one registered before kinds existed.
func TestTheRosterShowsEachAgentsKind(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, reg("old", "h1", ""))
	kinded := reg("new", "h1", "")
	kinded.Data = func() events.AgentRegistered { d := kinded.Data.(events.AgentRegistered); d.Kind = "claude"; return d }()
	waitSeq(t, p, e.append(t, kinded).Seq)
	for _, name := range []string{"old", "new"} {
		if a, _ := p.Agent(name); a.Kind != "claude" {
			t.Errorf("%s: kind %q, want claude", name, a.Kind)
		}
	}
}

// Attention belongs to a pane and a session: the dead pane's shell no
// longer holds back an agent restarted in a new pane, nor a reason seen
// before its session started again; one recorded after stands.
func TestAttentionEndsWithItsPaneAndItsSession(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, events.Event{Subject: "h1", Time: fixedNow(), Data: events.HostUp{Host: "h1"}})
	e.append(t, reg("w1", "h1", ""))
	e.append(t, events.Event{Subject: "w1", Time: at(2), Data: events.AgentSession{SessionID: "s1", State: "started", Source: "startup"}})
	attention := func(reason string) events.Event {
		return events.Event{Subject: "w1", Time: at(3), Data: events.AgentAttention{Reason: reason, Detail: "seen"}}
	}
	check := func(step, want string, ack events.Ack) {
		t.Helper()
		waitSeq(t, p, ack.Seq)
		if a, _ := p.Agent("w1"); a.NeedsAttention != want {
			t.Errorf("%s: needs_attention %q, want %q", step, a.NeedsAttention, want)
		}
	}
	check("the pane showed its shell", "shell", e.append(t, attention("shell")))
	restarted := reg("w1", "h1", "")
	restarted.Data = func() events.AgentRegistered { d := restarted.Data.(events.AgentRegistered); d.Pane = "p2"; return d }()
	check("registered again in a new pane", "", e.append(t, restarted))
	check("a draft in the new pane's box", "composer_not_empty", e.append(t, attention("composer_not_empty")))
	check("its session started again", "", e.append(t, events.Event{Subject: "w1", Time: at(4), Data: events.AgentSession{SessionID: "s1", State: "started", Source: "resume"}}))
	check("recorded after the session started", "no_prompt_box", e.append(t, attention("no_prompt_box")))
}

// A named session resumes only a Claude Code session id: one an agent
// reported in another shape (a hostile one, past its hook) is not passed
// to a launch.
func TestANamedSessionResumesOnlyAUUID(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, reg("w1", "h1", "build"))
	ack := e.append(t, events.Event{Subject: "w1", Time: at(2), Data: events.AgentSession{SessionID: "x\x15touch /tmp/pwned #", State: "started"}})
	waitSeq(t, p, ack.Seq)
	for _, s := range p.Sessions() {
		if s.Name == "build" && s.Resume != "" {
			t.Errorf("session build resumes %q, want nothing", s.Resume)
		}
	}
}

// checkRequeueIgnored re-appends w1's queued event of turn, an ended
// turn, and fails t if that opened the turn again or queued it for w1.
func checkRequeueIgnored(t *testing.T, e *env, p projections.Views, turn string) {
	t.Helper()
	waitSeq(t, p, republish(t, e, queued("w1", turn, "t0")))
	if tu, _, _ := p.Turn(context.Background(), turn); tu.State != lifecycle.StateFailed {
		t.Fatalf("a re-appended queued reopened ended turn %s: %s", turn, tu.State)
	}
	if a, _ := p.Agent("w1"); a.QueueDepth != 0 {
		t.Fatalf("queue depth %d, want 0", a.QueueDepth)
	}
}

// endSixTurns registers w1 and queues and cancels six turns with the ids
// mint gives, so that (with a cache of two) four leave memory; it returns
// the ids once p shows every turn failed.
func endSixTurns(t *testing.T, e *env, p projections.Views, mint func(i int) string) []string {
	t.Helper()
	e.append(t, reg("w1", "h1", ""))
	var turns []string
	var last uint64
	for i := range 6 {
		id := mint(i)
		turns = append(turns, id)
		e.append(t, queued("w1", id, fmt.Sprint("t", i)))
		last = e.append(t, events.Event{Subject: "w1", CorrelationID: id, Time: at(3), Data: events.AgentFailed{Reason: events.ReasonCancelled}}).Seq
	}
	waitSeq(t, p, last)
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		for _, id := range turns {
			if tu, ok, err := p.Turn(context.Background(), id); err != nil || !ok || tu.State != lifecycle.StateFailed {
				return fmt.Errorf("turn %s: %+v %v %v", id, tu, ok, err)
			}
		}
		return nil
	})
	return turns
}

// Each gateway judges a host's silence by its own clock, a sweep apart. A
// router that released a turn because its agent's host went silent puts
// that judgement in the log: every fold holds the host stale from there,
// though its own clock says the host is still within HostTTL, so no
// router gives the agent the turn just taken from it. The host is live
// again with a new heartbeat after the release in the log.
func TestAReleaseForASilentHostMakesItStaleInEveryFold(t *testing.T) {
	e, _, p := hostFold(t, at(2), "h3")
	turn := events.NewULIDSource(time.Now)()
	e.append(t, queued("w1", turn, "t"))
	stale := func(want bool) func() error {
		return func() error {
			a, _ := p.Agent("w1")
			hosts := p.Hosts()
			if a.Stale != want || len(hosts) != 1 || hosts[0].Stale != want {
				return fmt.Errorf("w1 stale = %v, hosts %+v; want stale %v", a.Stale, hosts, want)
			}
			return nil
		}
	}
	ack := e.append(t, events.Event{Subject: "w1", CorrelationID: turn, Time: at(2), Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "herdr"}})
	waitSeq(t, p, ack.Seq)
	if err := stale(false)(); err != nil {
		t.Fatal(err)
	}
	// Another gateway's router judged h3 silent (by its clock) and took
	// the turn back. This fold's clock still says 2s.
	ack = e.append(t, events.Event{Subject: "w1", CorrelationID: turn, Time: at(17), Source: "fleetd/h2/router",
		Data: events.AgentReleased{Role: "w", Attempt: 1, Reason: events.ReasonHostStale, Message: "host h3 went silent"}})
	waitSeq(t, p, ack.Seq)
	if err := stale(true)(); err != nil {
		t.Fatal(err)
	}
	if a, _ := p.Agent("w1"); a.Ready() {
		t.Fatal("w1 is ready for a role turn right after one was released from it for its silent host")
	}
	// An old heartbeat appended again does not clear it…
	ack = e.append(t, events.Event{Subject: "h3", Time: at(1), Data: events.HostUp{Host: "h3", Heartbeat: true}})
	waitSeq(t, p, ack.Seq)
	if err := stale(true)(); err != nil {
		t.Fatal(err)
	}
	// …a new one after the release does, though the host's clock is
	// behind the router's: the log's order decides.
	e.append(t, events.Event{Subject: "h3", Time: at(10), Data: events.HostUp{Host: "h3", Heartbeat: true}})
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, stale(false))
}

// An agent blocked on a dialog shows it; an answer, or the agent moving
// on, clears it; a turn failed denied ends the blocked status with it; an
// unanswered answer keeps the dialog and says why.
func TestTheRosterShowsAnOpenDialogUntilItGoes(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, reg("w1", "h1", ""))
	agent := func(ack events.Ack) projections.Agent {
		t.Helper()
		waitSeq(t, p, ack.Seq)
		a, _ := p.Agent("w1")
		return a
	}
	ev := func(sec int, d events.Data) events.Event { return events.Event{Subject: "w1", Time: at(sec), Data: d} }
	e.append(t, ev(2, events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook"}))
	open := events.AgentDialog{State: events.DialogOpen, Title: "Bash command", Question: "Do you want to proceed?", Options: []string{"Yes", "No"}}
	if a := agent(e.append(t, ev(3, open))); a.Dialog == nil || a.Dialog.Question != open.Question || len(a.Dialog.Options) != 2 {
		t.Fatalf("open: dialog %+v", a.Dialog)
	}
	if a := agent(e.append(t, ev(4, events.AgentDialog{State: events.DialogUnanswered, Answer: 1, Message: "no dialog on the agent's screen"}))); a.Dialog == nil || a.Dialog.Unanswered == "" {
		t.Errorf("unanswered: dialog %+v, want it kept, saying why", a.Dialog)
	}
	if a := agent(e.append(t, ev(5, events.AgentDialog{State: events.DialogAnswered, Answer: 2, By: "lead"}))); a.Dialog != nil {
		t.Errorf("answered: dialog %+v, want none", a.Dialog)
	}
	if a := agent(e.append(t, ev(6, events.AgentFailed{Reason: events.ReasonDenied, Message: "lead answered No"}))); a.Status != events.StatusIdle {
		t.Errorf("after a denied turn: status %s, want idle", a.Status)
	}
	e.append(t, ev(7, events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook"}))
	e.append(t, ev(8, open))
	if a := agent(e.append(t, ev(9, events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}))); a.Dialog != nil {
		t.Errorf("working again: dialog %+v, want none", a.Dialog)
	}
}

// An agent registered again in a new pane (a restart) is not ready on its
// old pane's status: its status is unknown until the new pane's first.
func TestANewPaneIsNotReadyOnTheOldPanesStatus(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, events.Event{Subject: "h1", Time: fixedNow(), Data: events.HostUp{Host: "h1"}})
	e.append(t, reg("w1", "h1", ""))
	ack := e.append(t, events.Event{Subject: "w1", Time: at(2), Data: events.AgentStatusChanged{Status: events.StatusDone, Source: "herdr"}})
	waitSeq(t, p, ack.Seq)
	if a, _ := p.Agent("w1"); !a.Ready() {
		t.Fatalf("before the restart: %+v, want ready", a)
	}
	again := reg("w1", "h1", "")
	again.Time = at(3)
	again.Data = func() events.AgentRegistered { d := again.Data.(events.AgentRegistered); d.Pane = "p2"; return d }()
	waitSeq(t, p, e.append(t, again).Seq)
	if a, _ := p.Agent("w1"); a.Ready() || a.Status != events.StatusUnknown {
		t.Errorf("registered in a new pane: status %s, ready %v; want unknown, not ready", a.Status, a.Ready())
	}
	waitSeq(t, p, e.append(t, events.Event{Subject: "w1", Time: at(4), Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}}).Seq)
	if a, _ := p.Agent("w1"); !a.Ready() {
		t.Errorf("after the new pane's first status: %+v, want ready", a)
	}
}
