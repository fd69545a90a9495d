package fleettest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// Fleet is a test fabric: NATS, the log and a view of it.
type Fleet struct {
	T     testing.TB
	NATS  *natstest.Server
	Log   events.Log
	Views projections.Views
	Kind  Kind

	beating sync.Once
}

// Host is the host every agent of the fabric is registered for.
const Host = "h1"

// heartbeat plays the gateway of Host from the first registration to the
// end of the test: up, then a heartbeat every few seconds, so its agents
// stay live (a host unheard for HostTTL after its first agent is stale).
func (f *Fleet) heartbeat() {
	f.MustAppend(events.Event{Subject: Host, Data: events.HostUp{Host: Host, Version: "test"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// A failed append leaves the host to go stale, as a
				// gateway that lost its NATS would.
				_, _ = f.Log.Append(ctx, events.Event{Subject: Host, Data: events.HostUp{Host: Host, Heartbeat: true}})
			}
		}
	}()
	f.T.Cleanup(func() { cancel(); <-done })
}

// Kind is how a fabric runs the projection it reads through. Both run the
// one fold of package projections; they differ in where it keeps state.
type Kind string

const (
	// Memory is the projection's fold in memory only (Options.Memory), as
	// `fleetd orchestrate` runs it: no KV bucket is written.
	Memory Kind = "memory"
	// Projected is the materialized projection, as the gateway runs it,
	// with its KV buckets and checkpoint.
	Projected Kind = "projected"
)

// Kinds lists both, for tests that must hold for either.
var Kinds = []Kind{Memory, Projected}

// New starts a fabric with the memory fold for the length of the test.
func New(tb testing.TB) *Fleet { return NewKind(tb, Memory) }

// NewKind starts a fabric reading through kind.
func NewKind(tb testing.TB, kind Kind) *Fleet {
	tb.Helper()
	return Over(tb, natstest.Start(tb), kind)
}

// Over builds a fabric on a running server: a "restarted" fleetd keeps
// its NATS (and, Projected, its KV views and checkpoint; a Memory fold
// over a server where a Projected one ran starts from its checkpoint).
func Over(tb testing.TB, srv *natstest.Server, kind Kind) *Fleet {
	tb.Helper()
	log := LogOn(tb, srv, events.Options{Source: "fleetd/test/test"})
	f := &Fleet{T: tb, NATS: srv, Log: log, Kind: kind}
	f.Views = runProjector(tb, log, srv, kind == Memory)
	return f
}

// StartLog starts a server, with natsOpts, for the length of the test and
// returns it and a log over its FLEET stream, made with opts (a Source
// says which tests appended).
func StartLog(tb testing.TB, opts events.Options, natsOpts ...natstest.Option) (*natstest.Server, events.Log) {
	tb.Helper()
	srv := natstest.Start(tb, natsOpts...)
	return srv, LogOn(tb, srv, opts)
}

// LogOn creates the FLEET stream on a running server, unless it is there,
// and returns a log over it made with opts.
func LogOn(tb testing.TB, srv *natstest.Server, opts events.Options) events.Log {
	tb.Helper()
	if _, err := events.EnsureStream(context.Background(), srv.JS, events.StreamOptions{}); err != nil {
		tb.Fatalf("fleettest: %v", err)
	}
	return events.New(srv.JS, opts)
}

// runProjector runs the projection — in memory only, or materialized in
// KV — until the test ends and returns once it has caught up. The memory
// fold gets the JetStream as `fleetd orchestrate` gives it one: it looks
// for buckets to start from and, finding none here, folds from the start.
func runProjector(tb testing.TB, log events.Log, srv *natstest.Server, memory bool) projections.Views {
	tb.Helper()
	p := projections.New(log, srv.JS, projections.Options{Memory: memory, FlushInterval: 10 * time.Millisecond})
	tb.Cleanup(p.Close) // after Run has returned: cleanups run last first
	stopped := Run(tb, "projector", p.Run)
	select {
	case <-p.Ready():
	case <-stopped:
		tb.Fatal("projector stopped before it was ready")
	case <-time.After(30 * time.Second):
		tb.Fatal("projector not ready after 30s")
	}
	return p
}

// Run runs run in a goroutine until the test ends, then cancels its
// context and waits for it; an error it returned fails the test, named by
// what. The channel is closed once run has returned, for a test that must
// notice an early stop.
func Run(tb testing.TB, what string, run func(context.Context) error) (stopped <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		if err != nil {
			tb.Errorf("%s: %v", what, err)
		}
	})
	return done
}

// Ctx is a context bounded to 30 s and the test.
func Ctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// MustAppend appends ev or fails the test.
func (f *Fleet) MustAppend(ev events.Event) events.Ack {
	f.T.Helper()
	ack, err := f.Log.Append(Ctx(f.T), ev)
	if err != nil {
		f.T.Fatalf("append %s: %v", ev.Type(), err)
	}
	return ack
}

// Register adds an idle agent of role and waits until the views show it.
func (f *Fleet) Register(agent, role string) {
	f.T.Helper()
	f.beating.Do(f.heartbeat)
	f.MustAppend(events.Event{Subject: agent, Data: events.AgentRegistered{Agent: agent, Host: Host, Pane: "p-" + agent, Role: role, Tier: 2, Model: "model-" + role}})
	ack := f.MustAppend(events.Event{Subject: agent, Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	if err := f.Views.WaitSeq(Ctx(f.T), ack.Seq); err != nil {
		f.T.Fatal(err)
	}
}

// Reply is what a fake agent answers to a prompt.
func Reply(text string) string { return "echo: " + text }

// Agents plays the gateways and the hooks of every agent in the fabric:
// it types each agent's next queued turn once the agent has nothing in
// flight, and after Delay submits and replies to it (Reply(text), with
// model, session and tokens), then reports the agent idle.
type Agents struct {
	f     *Fleet
	Delay time.Duration
	// Only limits the agents played; nil plays every agent.
	Only map[string]bool

	wg sync.WaitGroup
}

// RunAgents starts fake agents for the length of the test.
func (f *Fleet) RunAgents(delay time.Duration, only ...string) *Agents {
	a := &Agents{f: f, Delay: delay}
	if len(only) > 0 {
		a.Only = map[string]bool{}
		for _, id := range only {
			a.Only[id] = true
		}
	}
	fol, err := f.Log.Follow(context.Background(), events.Query{Subjects: []string{"fleet.agent.>"}})
	if err != nil {
		f.T.Fatalf("fleettest: follow: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.wg.Go(func() { a.run(ctx, fol) })
	f.T.Cleanup(func() { cancel(); fol.Stop(); a.wg.Wait() })
	return a
}

func (a *Agents) run(ctx context.Context, fol *events.Follower) {
	book := lifecycle.NewBook()
	typing := map[string]string{} // agent → turn typed, until replied
	for ev := range fol.Events() {
		book.Apply(ev)
		if in, ok := typing[ev.Subject]; ok {
			if t, _ := book.Turn(in); t.State.Final() {
				delete(typing, ev.Subject)
			}
		}
		agent := ev.Subject
		if a.Only != nil && !a.Only[agent] {
			continue
		}
		if _, busy := typing[agent]; busy {
			continue
		}
		next, ok := book.Next(agent)
		if !ok {
			continue
		}
		typed := events.Event{Subject: agent, CorrelationID: next.ID, Source: "fleetd/h1/gateway",
			Data: events.AgentTyped{Pane: "p-" + agent, Method: "agent.prompt", Bytes: len(next.Text)}}
		ack, err := a.f.Log.Append(ctx, typed)
		if err != nil {
			return
		}
		typed.Seq = ack.Seq
		book.Apply(typed)
		typing[agent] = next.ID
		a.wg.Go(func() { a.answer(ctx, agent, next) })
	}
}

func (a *Agents) answer(ctx context.Context, agent string, t lifecycle.Turn) {
	session := "sess-" + agent
	evs := []events.Event{
		{Subject: agent, CorrelationID: t.ID, Source: "fleetd/h1/hook", Data: events.AgentSubmitted{Via: "hook", PromptID: "p-" + t.ID, SessionID: session, Prompt: t.Text}},
		{Subject: agent, Source: "fleetd/h1/hook", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}},
	}
	for _, ev := range evs {
		if _, err := a.f.Log.Append(ctx, ev); err != nil {
			return
		}
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(a.Delay):
	}
	evs = []events.Event{
		{Subject: agent, CorrelationID: t.ID, Source: "fleetd/h1/hook", Data: events.AgentReplied{
			Reply: Reply(t.Text), PromptID: "p-" + t.ID, SessionID: session, Model: "model-of-" + agent,
			Tokens: events.Tokens{In: int64(len(t.Text)), Out: 7}}},
		{Subject: agent, Source: "fleetd/h1/hook", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}},
	}
	for _, ev := range evs {
		if _, err := a.f.Log.Append(ctx, ev); err != nil {
			return
		}
	}
}

// MaxInFlight folds evs and returns the most turns of role that were typed
// or submitted (not final) at any point of the sequence.
func MaxInFlight(evs []events.Event, role string) int {
	book := lifecycle.NewBook()
	open := map[string]bool{}
	peak := 0
	for _, ev := range evs {
		t, ok := book.Apply(ev)
		if !ok || t.Role != role {
			continue
		}
		if t.State.InFlight() {
			open[t.ID] = true
		} else {
			delete(open, t.ID)
		}
		peak = max(peak, len(open))
	}
	return peak
}
