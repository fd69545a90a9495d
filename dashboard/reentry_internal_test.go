package dashboard

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
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/projections"
)

// The Turns view filters by role, and a direct turn's role is its
// agent's: its matcher asks the views for the agent of every turn. It
// did so under the views' read lock, and a fold waiting to write between
// the two reads hung the view, the fold and every other reader of the
// process (issue H8, 1). The fold follows a log appended to without a
// pause while the Turns model is built in a loop; a watchdog fails the
// test, with every goroutine's stack, when the views stop answering.
func TestTheTurnsViewDoesNotHangTheFold(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/dashboard"})
	// Few ended turns kept: the writer ends one for every one it opens.
	p := projections.New(log, srv.JS, projections.Options{Memory: true, TurnCacheSize: 64})
	stalled := false
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if stalled {
			return // a stalled fold never returns: it is left behind
		}
		if err := <-ran; err != nil {
			t.Errorf("projector: %v", err)
		}
		p.Close()
	})
	s, err := New(Config{Log: log, Fleet: p.(Fleet)})
	if err != nil {
		t.Fatal(err)
	}

	const agents, open = 6, 300
	agent := func(i int) string { return fmt.Sprintf("w%d", i%agents) }
	var seed []events.Event
	for i := range agents {
		seed = append(seed, events.Event{Subject: agent(i), Data: events.AgentRegistered{Agent: agent(i), Host: "h1", Pane: fmt.Sprint("p", i), Role: "w-local", Tier: 2, Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned"}})
	}
	for i := range open {
		seed = append(seed, events.Event{Subject: agent(i), Data: events.AgentQueued{From: "lead", Text: "open"}})
	}
	acks, err := log.AppendMany(fleettest.Ctx(t), seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitSeq(fleettest.Ctx(t), acks[len(acks)-1].Seq); err != nil {
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
			if _, err := log.Append(ctx, events.Event{Subject: a, Data: events.AgentStatusChanged{Status: statuses[i%2], Source: "hook"}}); err != nil {
				t.Error(err)
				return
			}
			if i%4 == 0 {
				q, err := log.Append(ctx, events.Event{Subject: a, Data: events.AgentQueued{From: "lead", Text: "short"}})
				if err == nil {
					_, err = log.Append(ctx, events.Event{Subject: a, CorrelationID: q.ID, Data: events.AgentFailed{Reason: events.ReasonCancelled}})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}
	})

	const readers, rounds = 3, 40
	var progress atomic.Int64
	var done sync.WaitGroup
	for r := range readers {
		done.Go(func() {
			for range rounds {
				m := s.turnsModel(source{views: p, now: time.Now()}, turnFilter{Role: "w-local"})
				if m.Total < open {
					t.Errorf("reader %d: %d turns of role w-local, want at least the %d open", r, m.Total, open)
				}
				progress.Add(1)
			}
		})
	}
	stalled = watchdog(t, &progress, &done)
	close(stop)
	writer.Wait()
}

// watchdog waits for done and reports whether it stalled: it fails the
// test, with every goroutine's stack, once progress has not moved for
// stallAfter. Reads that wait on each other never move again, and a test
// that hangs would say nothing until go test's own timeout. A stalled
// test's goroutines cannot be stopped; the caller leaves them behind.
func watchdog(t *testing.T, progress *atomic.Int64, done *sync.WaitGroup) (stalled bool) {
	t.Helper()
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := progress.Load(), time.Now()
	for {
		select {
		case <-finished:
			return false
		case <-tick.C:
		}
		if p := progress.Load(); p != last {
			last, since = p, time.Now()
			continue
		}
		if time.Since(since) >= stallAfter {
			var b bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
			t.Errorf("the readers made no progress for %v (%d rounds done): stalled; goroutines:\n%s", stallAfter, last, b.String())
			return true
		}
	}
}

// stallAfter is how long readers may make no progress at all before the
// watchdog calls it a stall: far beyond any fold step (milliseconds), so
// a loaded machine does not trip it.
const stallAfter = 20 * time.Second
