package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// LogViews is a small in-memory projections.Views folded straight from the
// log (turns through lifecycle.Book, plus the roster and session rows the
// session manager reads). It lets `fleetd orchestrate` run against any
// fleetd over NATS without the materialized projector; where the projector
// runs, cmd should pass it instead. It replays from the start of the log on
// Run and keeps every turn in memory, so it suits a client's lifetime, not
// a gateway's.
type LogViews struct {
	log events.Log

	mu       sync.Mutex
	book     *lifecycle.Book
	roster   map[string]*projections.Agent
	sessions map[string]*projections.Session
	applied  uint64
	changed  chan struct{}
}

var _ projections.Views = (*LogViews)(nil)

// NewLogViews returns views over log; nothing is folded until Run.
func NewLogViews(log events.Log) *LogViews {
	return &LogViews{log: log, book: lifecycle.NewBook(), roster: map[string]*projections.Agent{},
		sessions: map[string]*projections.Session{}, changed: make(chan struct{})}
}

// Run folds the whole log, then every new event, until ctx ends.
func (v *LogViews) Run(ctx context.Context) error {
	f, err := v.log.Follow(ctx, events.Query{Skips: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("views: %w", err)
	}
	defer f.Stop()
	for ev := range f.Events() {
		v.Apply(ev)
	}
	if ctx.Err() != nil {
		return nil
	}
	return f.Err()
}

// sessionKey is the session an agent serves: its session name, else its id.
func sessionKey(a *projections.Agent) string {
	if a.Session != "" {
		return a.Session
	}
	return a.Agent
}

// Apply folds one event (Run calls it; tests may too).
func (v *LogViews) Apply(ev events.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ev.Seq > v.applied {
		v.applied = ev.Seq
	}
	defer v.notify()
	if ev.Skipped() {
		// Junk holds a place in the log and nothing else.
		return
	}
	if t, ok := v.book.Apply(ev); ok && t.Agent != "" {
		v.syncTurns(t.Agent)
		v.touch(t.Agent, ev)
	}
	if ev.Type().Category() != events.CategoryAgent {
		return
	}
	a := v.roster[ev.Subject]
	switch d := ev.Data.(type) {
	case events.AgentRegistered:
		if a == nil {
			a = &projections.Agent{Agent: ev.Subject, Status: events.StatusUnknown}
			v.roster[ev.Subject] = a
		}
		a.Host, a.Pane, a.Role, a.Tier, a.Parent = d.Host, d.Pane, d.Role, d.Tier, d.Parent
		a.Model, a.Cwd, a.Origin, a.Session = d.Model, d.Cwd, d.Origin, d.Session
		a.Exited = false
		a.LastSeen = ev.Time
		v.syncTurns(ev.Subject)
		if d.Session != "" {
			name := d.Session
			s := v.sessions[name]
			if s == nil {
				s = &projections.Session{Name: name, StartedAt: ev.Time}
				v.sessions[name] = s
			}
			s.Agent, s.Tier, s.State, s.Model, s.LastActive = ev.Subject, d.Tier, "active", d.Model, ev.Time
		}
	case events.AgentStatusChanged:
		if a != nil && d.Status.Valid() {
			a.Status, a.LastSeen = d.Status, ev.Time
		}
	case events.AgentSession:
		if a == nil {
			return
		}
		if d.State == "started" && d.SessionID != "" {
			a.SessionID = d.SessionID
		}
		s := v.sessions[sessionKey(a)]
		if s == nil && a.Session == "" && d.State == "started" {
			// As the materialized projection does: an agent with no
			// session name has a session named after itself once its
			// conversation starts.
			s = &projections.Session{Name: a.Agent, Agent: a.Agent, Tier: a.Tier, State: "active", Model: a.Model, StartedAt: ev.Time, LastActive: ev.Time}
			v.sessions[a.Agent] = s
		}
		if s == nil || s.Agent != ev.Subject {
			return
		}
		switch d.State {
		case "started":
			if d.SessionID != "" && d.SessionID != s.SessionID {
				// A new Claude conversation: its context starts empty.
				s.SessionID, s.Resume, s.Tokens, s.Turns = d.SessionID, d.SessionID, events.Tokens{}, 0
			}
			if d.TranscriptPath != "" {
				s.TranscriptPath = d.TranscriptPath
			}
			s.State = "active"
		case "ended":
			s.State = "ended"
		}
		s.LastActive = ev.Time
	case events.AgentReplied:
		if a == nil {
			return
		}
		a.Tokens, a.CostUSD = a.Tokens.Add(d.Tokens), a.CostUSD+d.CostUSD
		if s := v.sessions[sessionKey(a)]; s != nil && s.Agent == ev.Subject {
			s.Turns++
			s.Tokens, s.CostUSD = s.Tokens.Add(d.Tokens), s.CostUSD+d.CostUSD
			if s.SessionID == "" && d.SessionID != "" {
				s.SessionID, s.Resume = d.SessionID, d.SessionID
			}
		}
	case events.AgentExited:
		if a == nil {
			return
		}
		a.Exited = true
		if s := v.sessions[sessionKey(a)]; s != nil && s.Agent == ev.Subject {
			s.State = "closed"
		}
	}
}

// syncTurns copies the agent's queue and turn in flight from the book.
func (v *LogViews) syncTurns(agent string) {
	a := v.roster[agent]
	if a == nil {
		return
	}
	a.QueueDepth = len(v.book.Queue(agent))
	a.CurrentTurn = ""
	if in, ok := v.book.InFlight(agent); ok {
		a.CurrentTurn = in.ID
	}
}

// touch records activity of an agent's turn on its session.
func (v *LogViews) touch(agent string, ev events.Event) {
	a := v.roster[agent]
	if a == nil {
		return
	}
	if s := v.sessions[sessionKey(a)]; s != nil && s.Agent == agent && ev.Time.After(s.LastActive) {
		s.LastActive = ev.Time
	}
}

func (v *LogViews) notify() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// Roster lists every agent, sorted by id.
func (v *LogViews) Roster() []projections.Agent {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]projections.Agent, 0, len(v.roster))
	for _, a := range v.roster {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b projections.Agent) int { return cmp.Compare(a.Agent, b.Agent) })
	return out
}

// Agent returns one roster row.
func (v *LogViews) Agent(id string) (projections.Agent, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	a, ok := v.roster[id]
	if !ok {
		return projections.Agent{}, false
	}
	return *a, true
}

// Sessions lists sessions, sorted by name.
func (v *LogViews) Sessions() []projections.Session {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]projections.Session, 0, len(v.sessions))
	for _, s := range v.sessions {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b projections.Session) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Turn returns a turn's state.
func (v *LogViews) Turn(_ context.Context, id string) (lifecycle.Turn, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.book.Turn(id)
	return t, ok, nil
}

// WaitTurn blocks until the turn satisfies done or ctx ends.
func (v *LogViews) WaitTurn(ctx context.Context, id string, done func(lifecycle.Turn) bool) (lifecycle.Turn, error) {
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

// WaitSeq blocks until the event at stream sequence seq has been folded.
func (v *LogViews) WaitSeq(ctx context.Context, seq uint64) error {
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
func (v *LogViews) Applied() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.applied
}
