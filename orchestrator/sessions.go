package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/turns"
)

// SessionSpec describes a named session: who runs it and its context cap.
type SessionSpec struct {
	Name  string `json:"name"`
	Role  string `json:"role,omitempty"`
	Model string `json:"model,omitempty"`
	Cwd   string `json:"cwd,omitempty"`
	// Cap is the session's context cap in tokens (in+out of its turns);
	// 0 uses the manager's.
	Cap int64 `json:"cap,omitempty"`
}

func (s SessionSpec) validate() error {
	if err := turns.ValidSession(s.Name); err != nil {
		return err
	}
	if s.Role != "" {
		if err := events.ValidRole(s.Role); err != nil {
			return fmt.Errorf("session %s: %w", s.Name, err)
		}
	}
	if s.Cap < 0 {
		return fmt.Errorf("session %s: cap %d < 0", s.Name, s.Cap)
	}
	return nil
}

// SessionViews is the part of projections.Views the session manager reads.
type SessionViews interface {
	Roster() []*projections.Agent
	Agent(id string) (projections.Agent, bool)
	Sessions() []projections.Session
	WaitSeq(ctx context.Context, seq uint64) error
}

// SessionConfig configures a session manager for one tier.
type SessionConfig struct {
	Log     events.Log
	Views   SessionViews
	Spawner Spawner
	// Role is the role of sessions whose spec names none (default "main").
	Role string
	// Tier and Parent are stamped on every spawn: the manager's scope.
	Tier   int
	Parent string
	// IdleTTL closes a session's pane once it has been idle this long
	// (0: never). The session stays resumable.
	IdleTTL time.Duration
	// ContextCap is the default token cap (0: none).
	ContextCap int64
	// ReapEvery is Run's reaping period (default IdleTTL/4, at least 1s,
	// or 30s without a TTL).
	ReapEvery time.Duration
	// AllTiers makes the reapers look at every session and spawned agent
	// instead of only this manager's tier and parent: for the one
	// fleet-wide reaper a gateway runs.
	AllTiers bool
	// Host, when set, limits the reapers to agents on that host: a
	// gateway's Spawner can close only its own host's panes.
	Host string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnError hears about Run's reaping errors (default: ignored).
	OnError func(error)
}

func (c *SessionConfig) setDefaults() {
	if c.Role == "" {
		c.Role = "main"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ReapEvery == 0 {
		c.ReapEvery = 30 * time.Second
		if c.IdleTTL > 0 {
			c.ReapEvery = max(c.IdleTTL/4, time.Second)
		}
	}
	if c.OnError == nil {
		c.OnError = func(error) {}
	}
}

// Validate reports every missing piece at once.
func (c SessionConfig) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, fmt.Errorf("%w: sessions need a Log", ErrConfig))
	}
	if c.Views == nil {
		errs = append(errs, fmt.Errorf("%w: sessions need Views", ErrConfig))
	}
	if c.Spawner == nil {
		errs = append(errs, fmt.Errorf("%w: sessions need a Spawner (NoSpawner to only bind live sessions)", ErrConfig))
	}
	if c.IdleTTL < 0 || c.ContextCap < 0 {
		errs = append(errs, fmt.Errorf("%w: negative idle TTL or context cap", ErrConfig))
	}
	return errors.Join(errs...)
}

// Sessions is the session manager: it creates, names, resumes, reaps and
// restarts sessions for agents at one tier — the same code at every tier
// (the orchestrator over mains, a main over its workers). Every decision
// is made from the views, i.e. from the log; the only in-process state is
// a per-name lock that keeps one process from spawning a session twice.
type Sessions struct {
	cfg SessionConfig

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewSessions returns a session manager; it does no I/O.
func NewSessions(cfg SessionConfig) (*Sessions, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sessions{cfg: cfg, locks: map[string]*sync.Mutex{}}, nil
}

// Binding is the agent a session's next turn goes to.
type Binding struct {
	Session string
	Agent   string
	// Spawned: a pane was started for this binding. Resumed: it continues
	// the recorded Claude session. Fresh: the old conversation passed its
	// context cap and a new one started (no resume).
	Spawned bool
	Resumed bool
	Fresh   bool
	// Resume is the Claude session id the spawn resumed.
	Resume string
	// Previous is the agent the session was bound to before, if it changed.
	Previous string
}

func (s *Sessions) lock(name string) func() {
	s.mu.Lock()
	l, ok := s.locks[name]
	if !ok {
		l = &sync.Mutex{}
		s.locks[name] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Session returns the named session's row.
func (s *Sessions) Session(name string) (projections.Session, bool) {
	for _, row := range s.cfg.Views.Sessions() {
		if row.Name == name {
			return row, true
		}
	}
	return projections.Session{}, false
}

// Resolve returns the live agent a session is bound to, without spawning:
// how a main finds its peer (session:main-b) to message it.
func (s *Sessions) Resolve(name string) (string, bool) {
	row, ok := s.Session(name)
	if !ok {
		return "", false
	}
	a, ok := s.cfg.Views.Agent(row.Agent)
	if !ok || a.Exited {
		return "", false
	}
	return a.Agent, true
}

// Ensure returns the agent the session's next turn goes to, starting one
// when needed:
//   - no session yet: spawn a fresh agent <name>-1;
//   - bound to a live agent under its cap: that agent;
//   - live but past its cap: spawn <name>-<n+1> without resume (a fresh
//     conversation, which the caller hands a slice instead of the
//     history) and close the old pane if it is idle;
//   - its pane closed (reaped, exited): spawn <name>-<n+1> with Resume =
//     the recorded Claude session id (fresh instead if it is past its cap).
func (s *Sessions) Ensure(ctx context.Context, spec SessionSpec) (Binding, error) {
	if err := spec.validate(); err != nil {
		return Binding{}, err
	}
	defer s.lock(spec.Name)()
	capTokens := spec.Cap
	if capTokens == 0 {
		capTokens = s.cfg.ContextCap
	}
	b := Binding{Session: spec.Name}
	row, ok := s.Session(spec.Name)
	if !ok {
		return s.spawn(ctx, spec, b, "")
	}
	b.Previous = row.Agent
	a, known := s.cfg.Views.Agent(row.Agent)
	alive := known && !a.Exited
	var used int64
	if capTokens > 0 && row.SessionID != "" {
		var err error
		if used, err = s.conversationTokens(ctx, spec.Name, row.SessionID); err != nil {
			return b, err
		}
	}
	switch {
	case alive && capTokens > 0 && used >= capTokens && a.SessionID == row.SessionID:
		// The bound agent is running the conversation that passed its cap
		// (a fresh incarnation not yet started has no session id yet).
		b.Fresh = true
		b, err := s.spawn(ctx, spec, b, "")
		if err != nil {
			return b, err
		}
		// Its last turn is over (the status may lag the reply): close it.
		// A busy one is left to ReapOrphans.
		if a.CurrentTurn == "" && a.QueueDepth == 0 {
			if err := s.cfg.Spawner.Close(ctx, a.Agent); err != nil {
				return b, fmt.Errorf("close %s past its context cap: %w", a.Agent, err)
			}
		}
		return b, nil
	case alive:
		b.Agent, b.Previous = row.Agent, ""
		return b, nil
	}
	resume := row.Resume
	if resume == "" {
		resume = row.SessionID
	}
	if capTokens > 0 && used >= capTokens {
		b.Fresh, resume = true, ""
	}
	return s.spawn(ctx, spec, b, resume)
}

// conversationTokens is what one Claude conversation of the session has
// used: the tokens (in+out) of the replies carrying its session id, and of
// the usage events of replies that went before their usage, on any
// incarnation of the session. It reads the log rather than the session
// row so that a fresh conversation starts from zero whatever the
// projection does with the row's totals.
func (s *Sessions) conversationTokens(ctx context.Context, name, sessionID string) (int64, error) {
	var subjects []string
	for _, a := range s.cfg.Views.Roster() {
		if a.Session == name {
			for _, kind := range []string{"replied", "usage"} {
				subj, err := events.AgentSubject(a.Agent, kind)
				if err != nil {
					return 0, err
				}
				subjects = append(subjects, subj)
			}
		}
	}
	if len(subjects) == 0 {
		return 0, nil
	}
	var used int64
	for ev, err := range s.cfg.Log.Read(ctx, events.Query{Subjects: subjects}) {
		if err != nil {
			return 0, fmt.Errorf("tokens of session %s: %w", name, err)
		}
		switch d := ev.Data.(type) {
		case events.AgentReplied:
			if d.SessionID == sessionID {
				used += d.Tokens.In + d.Tokens.Out
			}
		case events.AgentUsage:
			if d.SessionID == sessionID {
				used += d.Tokens.In + d.Tokens.Out
			}
		}
	}
	return used, nil
}

// spawn starts the session's next incarnation and waits until the views
// show it bound.
func (s *Sessions) spawn(ctx context.Context, spec SessionSpec, b Binding, resume string) (Binding, error) {
	agent := s.nextAgent(spec.Name)
	role := spec.Role
	if role == "" {
		role = s.cfg.Role
	}
	ss := SpawnSpec{Agent: agent, Role: role, Tier: s.cfg.Tier, Parent: s.cfg.Parent, Session: spec.Name,
		Resume: resume, Model: spec.Model, Cwd: spec.Cwd}
	if err := s.cfg.Spawner.Spawn(ctx, ss); err != nil {
		return b, fmt.Errorf("spawn %s for session %s: %w", agent, spec.Name, err)
	}
	subj, err := events.AgentSubject(agent, "registered")
	if err != nil {
		return b, err
	}
	seq, err := s.cfg.Log.LastSeq(ctx, subj)
	if err != nil {
		return b, err
	}
	if seq == 0 {
		return b, fmt.Errorf("%w: %s", ErrNotRegistered, agent)
	}
	if err := s.cfg.Views.WaitSeq(ctx, seq); err != nil {
		return b, fmt.Errorf("wait for %s in the views: %w", agent, err)
	}
	b.Agent, b.Spawned, b.Resume, b.Resumed = agent, true, resume, resume != ""
	return b, nil
}

// nextAgent is <name>-<n>: one more than the highest incarnation of the
// session in the roster, skipping ids that serve something else.
func (s *Sessions) nextAgent(name string) string {
	taken := map[string]bool{}
	n := 0
	for _, a := range s.cfg.Views.Roster() {
		taken[a.Agent] = true
		if a.Session != name {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimPrefix(a.Agent, name+"-")); err == nil && strings.HasPrefix(a.Agent, name+"-") && k > n {
			n = k
		}
	}
	for {
		n++
		if id := name + "-" + strconv.Itoa(n); !taken[id] {
			return id
		}
	}
}

// Close closes the session's pane; the session stays resumable.
func (s *Sessions) Close(ctx context.Context, name string) error {
	defer s.lock(name)()
	row, ok := s.Session(name)
	if !ok {
		return nil
	}
	if a, ok := s.cfg.Views.Agent(row.Agent); !ok || a.Exited {
		return nil
	}
	if err := s.cfg.Spawner.Close(ctx, row.Agent); err != nil {
		return fmt.Errorf("close session %s (%s): %w", name, row.Agent, err)
	}
	return nil
}

func (s *Sessions) inScope(a projections.Agent) bool {
	if s.cfg.Host != "" && a.Host != s.cfg.Host {
		return false
	}
	return s.cfg.AllTiers || (a.Tier == s.cfg.Tier && a.Parent == s.cfg.Parent)
}

// ReapIdle closes the panes of sessions idle for longer than IdleTTL —
// ready, nothing queued or in flight, no activity since — and returns the
// session names closed. Their sessions stay resumable.
func (s *Sessions) ReapIdle(ctx context.Context) ([]string, error) {
	if s.cfg.IdleTTL <= 0 {
		return nil, nil
	}
	now := s.cfg.Now()
	var closed []string
	var errs []error
	for _, row := range s.cfg.Views.Sessions() {
		a, ok := s.cfg.Views.Agent(row.Agent)
		if !ok || a.Exited || !s.inScope(a) || !a.Ready() || now.Sub(row.LastActive) < s.cfg.IdleTTL {
			continue
		}
		if err := s.Close(ctx, row.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		closed = append(closed, row.Name)
	}
	return closed, errors.Join(errs...)
}

// ReapOrphans closes panes spawned for a named session that the session
// no longer owns — incarnations superseded while busy, or left behind by a
// crashed orchestrator or gateway — once they have nothing queued or in
// flight. It returns the agents closed. Agents spawned without a session
// (a lead's `fleetd spawn`) and adopted panes are never reaped.
func (s *Sessions) ReapOrphans(ctx context.Context) ([]string, error) {
	owner := map[string]string{}
	for _, row := range s.cfg.Views.Sessions() {
		owner[row.Name] = row.Agent
	}
	var closed []string
	var errs []error
	for _, a := range s.cfg.Views.Roster() {
		managed := a.Origin == "spawned" && a.Session != "" && a.Session != a.Agent
		if !managed || a.Exited || owner[a.Session] == a.Agent || !s.inScope(*a) ||
			a.CurrentTurn != "" || a.QueueDepth > 0 {
			continue
		}
		if err := s.cfg.Spawner.Close(ctx, a.Agent); err != nil {
			errs = append(errs, fmt.Errorf("close orphan %s: %w", a.Agent, err))
			continue
		}
		closed = append(closed, a.Agent)
	}
	return closed, errors.Join(errs...)
}

// Run reaps orphans once, then idle sessions and orphans every ReapEvery,
// until ctx ends.
func (s *Sessions) Run(ctx context.Context) error {
	if _, err := s.ReapOrphans(ctx); err != nil {
		s.cfg.OnError(err)
	}
	t := time.NewTicker(s.cfg.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := s.ReapIdle(ctx); err != nil {
			s.cfg.OnError(err)
		}
		if _, err := s.ReapOrphans(ctx); err != nil {
			s.cfg.OnError(err)
		}
	}
}

// NoSpawner is a Spawner for processes that can bind sessions whose panes
// are up but cannot start panes (a client without the gateway's herdr).
type NoSpawner struct{}

// Spawn always fails with ErrNoSpawner.
func (NoSpawner) Spawn(_ context.Context, spec SpawnSpec) error {
	return fmt.Errorf("%w: cannot start %s for session %s from here", ErrNoSpawner, spec.Agent, spec.Session)
}

// Close always fails with ErrNoSpawner.
func (NoSpawner) Close(_ context.Context, agent string) error {
	return fmt.Errorf("%w: cannot close %s from here", ErrNoSpawner, agent)
}

// Peers are the other live agents at an agent's tier under the same
// parent — a main pair finds each other here — sorted by id.
func Peers(roster []*projections.Agent, self string) []*projections.Agent {
	me, ok := lo.Find(roster, func(a *projections.Agent) bool { return a.Agent == self })
	if !ok {
		return nil
	}
	return lo.Filter(roster, func(a *projections.Agent, _ int) bool {
		return a.Agent != self && !a.Exited && a.Tier == me.Tier && a.Parent == me.Parent
	})
}

// TierOf is agent's tier in the roster once views have caught up with
// the log (a main running a sub-plan from its pane orchestrates at its
// own tier), or 0 for a sender that is not an agent.
func TierOf(ctx context.Context, log events.Log, views projections.Views, agent string) (int, error) {
	seq, err := log.LastSeq(ctx, events.SubjectAll)
	if err != nil {
		return 0, err
	}
	if err := views.WaitSeq(ctx, seq); err != nil {
		return 0, fmt.Errorf("read the roster: %w", err)
	}
	if a, ok := views.Agent(agent); ok {
		return a.Tier, nil
	}
	return 0, nil
}
