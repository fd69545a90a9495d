package retention_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/retention"
)

func TestParsePolicy(t *testing.T) {
	for _, c := range []struct {
		in   string
		want retention.Policy
		text string
	}{
		{"forever", retention.Policy{}, "forever"},
		{"0", retention.Policy{}, "forever"},
		{"7d", retention.Policy{MaxAge: 7 * 24 * time.Hour}, "7d"},
		{"36h", retention.Policy{MaxAge: 36 * time.Hour}, "36h0m0s"},
		{"2w", retention.Policy{MaxAge: 14 * 24 * time.Hour}, "14d"},
		{"500MiB", retention.Policy{MaxBytes: 500 << 20}, "500MiB"},
		{"2GB", retention.Policy{MaxBytes: 2e9}, "2GB"},
		{"7d, 1GiB", retention.Policy{MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30}, "7d,1GiB"},
		{"1048576", retention.Policy{MaxBytes: 1 << 20}, "1MiB"},
	} {
		got, err := retention.ParsePolicy(c.in)
		if err != nil || got != c.want || got.String() != c.text {
			t.Errorf("ParsePolicy(%q) = %+v (%q), %v; want %+v (%q)", c.in, got, got.String(), err, c.want, c.text)
		}
	}
	for _, bad := range []string{"soon", "7d,8d", "1GB,2GB", "-3d", "12 parsecs"} {
		if _, err := retention.ParsePolicy(bad); !errors.Is(err, retention.ErrPolicy) {
			t.Errorf("ParsePolicy(%q): %v, want ErrPolicy", bad, err)
		}
	}
}

type fixture struct {
	t     *testing.T
	srv   *natstest.Server
	log   events.Log
	ids   func() string
	views projections.Projector
	done  chan error
	stop  context.CancelFunc
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/retention"})
	f := &fixture{t: t, srv: srv, log: log, ids: events.NewULIDSource(time.Now)}
	f.run()
	t.Cleanup(f.halt)
	return f
}

// run starts a projector over the fixture's buckets.
func (f *fixture) run() {
	f.views = projections.New(f.log, f.srv.JS, projections.Options{FlushInterval: 5 * time.Millisecond, CheckpointInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	f.stop, f.done = cancel, make(chan error, 1)
	go func() { f.done <- f.views.Run(ctx) }()
	select {
	case <-f.views.Ready():
	case <-time.After(20 * time.Second):
		f.t.Fatal("projector not ready")
	}
}

func (f *fixture) halt() {
	if f.stop != nil {
		f.stop()
		if err := <-f.done; err != nil {
			f.t.Errorf("projector: %v", err)
		}
		f.stop = nil
	}
}

func (f *fixture) add(ev events.Event) events.Ack {
	f.t.Helper()
	ack, err := f.log.Append(context.Background(), ev)
	if err != nil {
		f.t.Fatal(err)
	}
	return ack
}

func (f *fixture) register(agent string) {
	f.add(events.Event{Subject: agent, Data: events.AgentRegistered{Agent: agent, Host: "h1", Pane: "p-" + agent, Role: "w"}})
	f.add(events.Event{Subject: agent, Data: events.AgentSession{SessionID: "s-" + agent, State: "started"}})
}

func (f *fixture) status(agent string, st events.Status) {
	f.add(events.Event{Subject: agent, Data: events.AgentStatusChanged{Status: st, Source: "herdr"}})
}

// turn queues a turn for agent and, when final, replies to it.
func (f *fixture) turn(agent, text string, final bool) string {
	id := f.ids()
	f.add(events.Event{ID: id, Subject: agent, CorrelationID: id, Data: events.AgentQueued{From: "lead", Text: text}})
	if final {
		f.add(events.Event{Subject: agent, CorrelationID: id, Data: events.AgentTyped{Pane: "p-" + agent}})
		f.add(events.Event{Subject: agent, CorrelationID: id, Data: events.AgentReplied{Reply: "re: " + text}})
	}
	return id
}

func (f *fixture) caughtUp() {
	f.t.Helper()
	st, err := f.log.State(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.views.WaitSeq(ctx, st.LastSeq); err != nil {
		f.t.Fatal(err)
	}
	checkfor.Eventually(f.t, 10*time.Second, 10*time.Millisecond, func() error {
		if h := f.views.Horizon(); h.Checkpoint < st.LastSeq {
			return fmt.Errorf("no checkpoint at %d: %+v", st.LastSeq, h)
		}
		return nil
	})
}

func (f *fixture) read(subject string) []events.Event {
	return eventstest.ReadAll(f.t, f.log, events.Query{Subjects: []string{subject}})
}

func texts(evs []events.Event) []string {
	var out []string
	for _, ev := range evs {
		if d, ok := ev.Data.(events.AgentQueued); ok {
			out = append(out, d.Text)
		}
	}
	return out
}

// With a retention of an hour, a day-old log loses its final turns, the
// exited agent and the done job, but keeps the open turn whole (and what
// came after it), the latest state of the live agents and hosts and the
// open job; a fold of what is left from its start knows every live agent
// and open turn; a restarted projection equals the live one; and once the
// open turn is final, the next sweep takes it too.
func TestCompactionTrimsWhatNoReaderNeeds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	// A day ago (by the compactor's clock, the stream's time is now).
	f.register("w1")
	f.register("w2")
	f.register("w3")
	for range 5 {
		f.status("w1", events.StatusWorking)
		f.status("w1", events.StatusIdle)
		f.add(events.Event{Subject: "h1", Data: events.HostUp{Host: "h1", Heartbeat: true}})
	}
	f.turn("w1", "old final 1", true)
	f.turn("w1", "old final 2", true)
	f.turn("w2", "old final of a gone agent", true)
	f.add(events.Event{Subject: "w2", Data: events.AgentExited{Reason: "closed"}})
	f.add(events.Event{Subject: "jdone", Data: events.JobCreated{Goal: "g"}})
	f.add(events.Event{Subject: "jdone", Data: events.JobDone{}})
	f.add(events.Event{Subject: "jopen", Data: events.JobCreated{Goal: "g"}})
	f.caughtUp()
	mid := time.Now()

	clk := &fleettest.Clock{}
	var sweeps []retention.Sweep
	c, err := retention.New(retention.Config{JS: f.srv.JS, Log: f.log, Views: f, Policy: retention.Policy{MaxAge: time.Hour},
		Now: clk.Now, OnSweep: func(s retention.Sweep) { sweeps = append(sweeps, s) }})
	if err != nil {
		t.Fatal(err)
	}
	// The first part of the log is more than an hour old.
	clk.Set(mid.Add(time.Hour + time.Minute))
	open := f.turn("w3", "old open", false)
	f.turn("w1", "final after the open one", true)
	f.status("w1", events.StatusWorking)
	f.caughtUp()
	clk.Set(mid.Add(time.Hour + 2*time.Minute)) // everything so far is old

	sw, err := c.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Removed == 0 {
		t.Fatalf("sweep %+v trimmed nothing", sw)
	}
	if got, want := texts(f.read("fleet.agent.*.queued")), []string{"old open", "final after the open one"}; !slices.Equal(got, want) {
		t.Errorf("queued turns left %q, want %q (old final turns gone, the open one and what follows kept)", got, want)
	}
	if n := len(f.read("fleet.agent.w2.>")); n != 0 {
		t.Errorf("the exited agent keeps %d events", n)
	}
	for _, agent := range []string{"w1", "w3"} {
		if n := len(f.read("fleet.agent." + agent + ".registered")); n != 1 {
			t.Errorf("%s: %d registrations left, want its last", agent, n)
		}
		if n := len(f.read("fleet.agent." + agent + ".session")); n != 1 {
			t.Errorf("%s: %d session events left, want its last", agent, n)
		}
	}
	if st := f.read("fleet.agent.w1.status"); len(st) == 0 || st[len(st)-1].Data.(events.AgentStatusChanged).Status != events.StatusWorking {
		t.Errorf("w1's statuses left: %d, want its latest (working) kept", len(st))
	}
	if n := len(f.read("fleet.host.h1.up")); n != 1 {
		t.Errorf("%d heartbeats left, want the last", n)
	}
	if n := len(f.read("fleet.job.jdone.>")); n != 0 {
		t.Errorf("the done job keeps %d events", n)
	}
	if n := len(f.read("fleet.job.jopen.>")); n != 1 {
		t.Errorf("the open job keeps %d events, want all (1)", n)
	}

	// A fold of what is left from its start knows the live agents and the
	// open turn, whole.
	book := lifecycle.NewBook()
	registered := map[string]bool{}
	for _, ev := range f.read(events.SubjectAll) {
		book.Apply(ev)
		if _, ok := ev.Data.(events.AgentRegistered); ok {
			registered[ev.Subject] = true
		}
	}
	if tu, ok := book.Turn(open); !ok || tu.State != lifecycle.StateQueued || tu.Text != "old open" {
		t.Errorf("the open turn folded from what is left: %+v %v", tu, ok)
	}
	if q := book.Queue("w3"); !slices.Equal(q, []string{open}) {
		t.Errorf("w3's queue from what is left: %v", q)
	}
	if !registered["w1"] || !registered["w3"] || registered["w2"] {
		t.Errorf("registrations left: %v, want w1 and w3", registered)
	}

	// A restarted projection equals the live one.
	live := snapshot(t, f.views)
	f.halt()
	f.run()
	if got := snapshot(t, f.views); got != live {
		t.Errorf("restarted projection:\n%s\nlive:\n%s", got, live)
	}

	// The open turn ends: the next sweep takes it too.
	f.add(events.Event{Subject: "w3", CorrelationID: open, Data: events.AgentFailed{Reason: events.ReasonTimeout}})
	f.caughtUp()
	clk.Set(clk.Now().Add(2 * time.Hour))
	if _, err := c.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := texts(f.read("fleet.agent.*.queued")); len(got) != 0 {
		t.Errorf("queued turns left after every turn ended: %q", got)
	}
	if tu, ok, err := f.views.Turn(ctx, open); err != nil || !ok || tu.State != lifecycle.StateFailed {
		t.Errorf("the trimmed turn is still answered from the views: %+v %v %v", tu, ok, err)
	}
}

// Nothing is trimmed before the views have a checkpoint of the stream, and
// the policy "forever" trims nothing.
func TestCompactionWaitsForACheckpointAndRespectsForever(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.halt() // no projection runs: no checkpoint of the turns below
	for range 3 {
		f.turn("w1", "t", true)
	}
	views := projections.New(f.log, f.srv.JS, projections.Options{})
	c, err := retention.New(retention.Config{JS: f.srv.JS, Log: f.log, Views: views, Policy: retention.Policy{MaxBytes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if sw, err := c.Sweep(ctx); err != nil || sw.Removed != 0 || sw.Skipped == "" {
		t.Errorf("sweep without a checkpoint: %+v %v", sw, err)
	}
	f.run()
	f.caughtUp()
	forever, err := retention.New(retention.Config{JS: f.srv.JS, Log: f.log, Views: f.views})
	if err != nil {
		t.Fatal(err)
	}
	if sw, err := forever.Sweep(ctx); err != nil || sw.Removed != 0 {
		t.Errorf("forever: %+v %v", sw, err)
	}
	c2, err := retention.New(retention.Config{JS: f.srv.JS, Log: f.log, Views: f.views, Policy: retention.Policy{MaxBytes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if sw, err := c2.Sweep(ctx); err != nil || sw.Removed == 0 {
		t.Errorf("by size: %+v %v", sw, err)
	}
}

// Horizon is the current projector's: the fixture restarts it.
func (f *fixture) Horizon() projections.Horizon { return f.views.Horizon() }

// snapshot renders what a projection shows: roster, sessions, and every
// turn it holds open.
func snapshot(t *testing.T, v projections.Projector) string {
	t.Helper()
	h := v.Horizon()
	return fmt.Sprintf("roster %+v\nsessions %+v\nopen from %d, live %v, gone %v\n", lo.FromSlicePtr(v.Roster()), v.Sessions(), h.OpenFrom, h.Live, h.Gone)
}
