package viewstest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// Views folds the whole log in memory. It implements projections.Views.
type Views struct {
	mu       sync.Mutex
	book     *lifecycle.Book
	agents   map[string]*projections.Agent
	sessions map[string]*projections.Session
	applied  uint64
	changed  chan struct{} // closed and replaced on every applied event
}

var _ projections.Views = (*Views)(nil)

// Start follows log from its beginning until the test ends.
func Start(tb testing.TB, log events.Log) *Views {
	tb.Helper()
	v := &Views{
		book: lifecycle.NewBook(), agents: map[string]*projections.Agent{},
		sessions: map[string]*projections.Session{}, changed: make(chan struct{}),
	}
	f, err := log.Follow(context.Background(), events.Query{})
	if err != nil {
		tb.Fatalf("viewstest: follow: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range f.Events() {
			v.apply(ev)
		}
	}()
	tb.Cleanup(func() { f.Stop(); <-done })
	return v
}

func (v *Views) agent(id string) *projections.Agent {
	a, ok := v.agents[id]
	if !ok {
		a = &projections.Agent{Agent: id, Status: events.StatusUnknown}
		v.agents[id] = a
	}
	return a
}

func (v *Views) apply(ev events.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, turnChanged := v.book.Apply(ev)
	if ev.Type().Category() == events.CategoryAgent {
		a := v.agent(ev.Subject)
		a.LastSeen = ev.Time
		switch d := ev.Data.(type) {
		case events.AgentRegistered:
			a.Host, a.Pane, a.Role, a.Tier, a.Parent, a.Model, a.Cwd, a.Origin = d.Host, d.Pane, d.Role, d.Tier, d.Parent, d.Model, d.Cwd, d.Origin
			a.Session, a.Exited = d.Session, false
		case events.AgentStatusChanged:
			a.Status = d.Status
		case events.AgentExited:
			a.Exited = true
		case events.AgentSession:
			a.SessionID = d.SessionID
			s, ok := v.sessions[d.SessionID]
			if !ok {
				s = &projections.Session{Name: d.SessionID, Agent: ev.Subject, SessionID: d.SessionID, StartedAt: ev.Time}
				v.sessions[d.SessionID] = s
			}
			s.State = map[string]string{"started": "active", "ended": "ended"}[d.State]
			s.LastActive, s.Resume = ev.Time, d.SessionID
		case events.AgentReplied:
			if turnChanged {
				a.Tokens = a.Tokens.Add(d.Tokens)
				a.CostUSD += d.CostUSD
			}
		}
	}
	if turnChanged && t.Agent != "" {
		a := v.agent(t.Agent)
		a.QueueDepth = len(v.book.Queue(t.Agent))
		a.CurrentTurn = ""
		if in, ok := v.book.InFlight(t.Agent); ok {
			a.CurrentTurn = in.ID
		}
	}
	if ev.Seq > v.applied {
		v.applied = ev.Seq
	}
	close(v.changed)
	v.changed = make(chan struct{})
}

// Roster lists every agent, sorted by id.
func (v *Views) Roster() []projections.Agent {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]projections.Agent, 0, len(v.agents))
	for _, a := range v.agents {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b projections.Agent) int { return compare(a.Agent, b.Agent) })
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Agent returns one roster row.
func (v *Views) Agent(id string) (projections.Agent, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	a, ok := v.agents[id]
	if !ok {
		return projections.Agent{}, false
	}
	return *a, true
}

// Sessions lists sessions, sorted by name.
func (v *Views) Sessions() []projections.Session {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]projections.Session, 0, len(v.sessions))
	for _, s := range v.sessions {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b projections.Session) int { return compare(a.Name, b.Name) })
	return out
}

// Turn returns a turn's state.
func (v *Views) Turn(_ context.Context, id string) (lifecycle.Turn, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.book.Turn(id)
	return t, ok, nil
}

// WaitTurn blocks until done(turn) or ctx ends; an unknown turn waits.
func (v *Views) WaitTurn(ctx context.Context, id string, done func(lifecycle.Turn) bool) (lifecycle.Turn, error) {
	for {
		v.mu.Lock()
		t, ok := v.book.Turn(id)
		ch := v.changed
		v.mu.Unlock()
		if ok && done(t) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-ch:
		}
	}
}

// WaitSeq blocks until every event up to seq has been applied.
func (v *Views) WaitSeq(ctx context.Context, seq uint64) error {
	for {
		v.mu.Lock()
		applied, ch := v.applied, v.changed
		v.mu.Unlock()
		if applied >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Applied is the last stream sequence folded.
func (v *Views) Applied() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.applied
}
