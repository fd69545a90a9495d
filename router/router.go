package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/restart"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
)

// DefaultAckWait is Config.AckWait's default. It is how long the role's
// queue stands still when the host whose router holds its head dies: the
// server hands the head to another router only once it runs out. Short —
// role turns must go on being assigned on the survivors within 3 s of a
// host's loss — because a living router renews it (InProgress at a third
// of it), and a second decision after an expiry is harmless: the
// assignment's id is derived from the turn's, so it is stored once and
// folded once, and its guard keeps the cap (assign).
const DefaultAckWait = 1500 * time.Millisecond

// Budgets is what the router asks of package budget.
type Budgets interface {
	// Agent is how a new turn for the agent stands.
	Agent(a projections.Agent) *projections.BudgetState
	// Role is how a new turn for the role stands.
	Role(role string) *projections.BudgetState
}

// Config is what a router runs with.
type Config struct {
	// Log is the event log it appends assignments to.
	Log events.Log
	// JS manages the per-role durable consumers.
	JS jetstream.JetStream
	// Views is the projection it reads agents and turns from.
	Views projections.Views
	// Roles gives each role's cap; roles seen only in the log have none.
	Roles roles.Config
	// Budgets, when set, holds a role's turns while the role is out of
	// budget and passes over agents out of their own: the turn waits at
	// the head of the queue until a budget frees (package budget's
	// Checker).
	Budgets Budgets
	// Host names this router in event sources (fleetd/<host>/router).
	Host   string
	Logger *slog.Logger
	Now    func() time.Time
	// Poll is the fallback re-check interval while a turn waits for an
	// agent; changes of the views wake the worker sooner. Default 1s.
	Poll time.Duration
	// AckWait is how long a held head of queue stays this router's without
	// a keep-alive; the worker sends InProgress at a third of it. Default
	// DefaultAckWait.
	AckWait time.Duration
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Poll == 0 {
		c.Poll = time.Second
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.Host == "" {
		c.Host = "host"
	}
}

// Validate reports every missing part at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, fmt.Errorf("%w: no Log", ErrConfig))
	}
	if c.JS == nil {
		errs = append(errs, fmt.Errorf("%w: no JS", ErrConfig))
	}
	if c.Views == nil {
		errs = append(errs, fmt.Errorf("%w: no Views", ErrConfig))
	}
	if c.Poll < 0 || c.AckWait < 0 {
		errs = append(errs, fmt.Errorf("%w: negative Poll or AckWait", ErrConfig))
	}
	return errors.Join(errs...)
}

// Router dispatches role turns to agents. Build it with New and run it
// with Run.
type Router struct {
	cfg    Config
	reg    *events.Registry
	source string

	mu      sync.Mutex
	workers map[string]bool
}

// New returns a router that is not yet running. It does no I/O.
func New(cfg Config) (*Router, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Router{cfg: cfg, reg: events.NewRegistry(), source: "fleetd/" + cfg.Host + "/router", workers: map[string]bool{}}, nil
}

// roleQueuedAll is every role's queue.
const roleQueuedAll = "fleet.role.*.queued"

// Run dispatches until ctx ends: one worker per role, for the roles in the
// config and every role that turns up in the log. It returns nil after a
// clean stop.
func (r *Router) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	start := func(role string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.workers[role] || events.ValidRole(role) != nil {
			return
		}
		r.workers[role] = true
		wg.Go(func() { r.work(ctx, role) })
	}
	for _, role := range r.cfg.Roles.Names() {
		start(role)
	}
	wg.Go(func() { r.reclaim(ctx) })
	// Follow new role queues first, then list the existing ones, so a role
	// that appears in between is seen by one or the other. A follower that
	// stops (the stream lost, say) is followed again with backoff: the
	// router outlives its stream and resumes when the stream is back.
	restart.Loop(ctx, func(ctx context.Context) error { return r.watchRoles(ctx, start) }, func(err error, _ time.Duration) {
		r.cfg.Logger.Warn("router: following role queues failed; retrying with backoff", "err", err)
	})
	return nil
}

// watchRoles starts a worker for every role with a queue, now and as new
// ones appear, until the follower stops.
func (r *Router) watchRoles(ctx context.Context, start func(string)) error {
	f, err := r.cfg.Log.Follow(ctx, events.Query{Subjects: []string{roleQueuedAll}, New: true})
	if err != nil {
		return fmt.Errorf("router: follow role queues: %w", err)
	}
	defer f.Stop()
	known, err := r.queuedRoles(ctx)
	if err != nil {
		return err
	}
	for _, role := range known {
		start(role)
	}
	for ev := range f.Events() {
		start(ev.Subject)
	}
	return fmt.Errorf("router: role queue follower stopped: %w", f.Err())
}

// queuedRoles lists the roles that have ever had a turn queued.
func (r *Router) queuedRoles(ctx context.Context) ([]string, error) {
	s, err := r.cfg.JS.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("router: stream: %w", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(roleQueuedAll))
	if err != nil {
		return nil, fmt.Errorf("router: list role queues: %w", err)
	}
	var out []string
	for subj := range info.State.Subjects {
		if _, role, _, err := events.ParseSubject(subj); err == nil {
			out = append(out, role)
		}
	}
	return out, nil
}
