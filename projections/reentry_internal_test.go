package projections

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// A view's callback (Turns' match, WaitTurn's done) that reads the views
// again must not take the views' lock a second time: once the fold waits
// to write between the two, a reader holding the lock waits for the fold
// and the fold for the reader (a pending writer blocks new readers), and
// every read of the process hangs behind them. The test folds without a
// pause while readers loop through every view, with callbacks that call
// back in; a watchdog fails it, with every goroutine's stack, when the
// readers stop moving. Before the callbacks ran outside the lock it hung
// within the first few rounds.
func TestReadsDoNotWaitOnEachOtherWhileTheFoldWrites(t *testing.T) {
	// The writer ends a turn for every one it opens, and the cache keeps
	// few of them: the views stay the same size however long it runs.
	m := New(nil, nil, Options{Memory: true, TurnCacheSize: 64}).(*materializer)
	ctx := context.Background()
	ids := events.NewULIDSource(time.Now)
	start := time.Now().UTC()
	var seq uint64
	ev := func(agent, turn string, d events.Data) events.Event {
		seq++
		return events.Event{Seq: seq, ID: ids(), Subject: agent, CorrelationID: turn, Time: start.Add(time.Duration(seq) * time.Millisecond), Data: d}
	}
	const agents, open = 8, 400
	agent := func(i int) string { return fmt.Sprintf("w%d", i%agents) }
	var seed []events.Event
	for i := range agents {
		seed = append(seed, ev(agent(i), "", events.AgentRegistered{Agent: agent(i), Host: "h1", Pane: fmt.Sprint("p", i), Role: "w-local", Tier: 2, Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned"}))
	}
	var someTurn string
	for i := range open {
		// Direct turns: no role of their own, so a matcher that filters by
		// role asks for the agent's (as the dashboard's Turns view does).
		q := ev(agent(i), "", events.AgentQueued{From: "lead", Text: "open"})
		someTurn = q.ID
		seed = append(seed, q)
	}
	if err := m.fold(ctx, seed); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		statuses := []events.Status{events.StatusWorking, events.StatusIdle}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a := agent(i)
			evs := []events.Event{ev(a, "", events.AgentStatusChanged{Status: statuses[i%2], Source: "hook"})}
			if i%4 == 0 {
				q := ev(a, "", events.AgentQueued{From: "lead", Text: "short"})
				evs = append(evs, q, ev(a, q.ID, events.AgentFailed{Reason: events.ReasonCancelled}))
			}
			for _, e := range evs {
				// One event a fold: the write lock as often as it comes.
				if err := m.fold(ctx, []events.Event{e}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})

	const readers, rounds = 4, 60
	var progress atomic.Int64
	var done sync.WaitGroup
	for r := range readers {
		done.Go(func() {
			for range rounds {
				roleOf := func(t lifecycle.Turn) bool {
					a, ok := m.Agent(t.Agent)
					return ok && a.Role == "w-local"
				}
				if got := m.Turns(roleOf); len(got) < open {
					t.Errorf("reader %d: %d turns of role w-local, want at least the %d open", r, len(got), open)
				}
				m.Roster()
				m.Sessions()
				m.Hosts()
				m.Usage(KindAgent, agent(r))
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				if _, err := m.WaitTurn(wctx, someTurn, func(t lifecycle.Turn) bool {
					_, ok := m.Agent(t.Agent)
					return ok
				}); err != nil {
					t.Errorf("reader %d: wait for an open turn it holds: %v", r, err)
				}
				cancel()
				progress.Add(1)
			}
		})
	}
	watchdog(t, &progress, &done)
	close(stop)
	writer.Wait()
}

// watchdog waits for done, and fails the test with every goroutine's
// stack once progress has not moved for stallAfter: reads that wait on
// each other never move again, and a test that hangs would say nothing
// until go test's own timeout. A stalled test leaves its goroutines
// behind (they cannot be stopped), so it must be the test's last word.
func watchdog(t *testing.T, progress *atomic.Int64, done *sync.WaitGroup) {
	t.Helper()
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := progress.Load(), time.Now()
	for {
		select {
		case <-finished:
			return
		case <-tick.C:
		}
		if p := progress.Load(); p != last {
			last, since = p, time.Now()
			continue
		}
		if time.Since(since) >= stallAfter {
			var b bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
			t.Fatalf("the readers made no progress for %v (%d rounds done): stalled; goroutines:\n%s", stallAfter, last, b.String())
		}
	}
}

// stallAfter is how long readers may make no progress at all before the
// watchdog calls it a stall: far beyond any fold step (milliseconds), so
// a loaded machine does not trip it.
const stallAfter = 20 * time.Second
