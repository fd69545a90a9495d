package nudge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/restart"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
)

// Inboxes is what the nudger needs of the inboxes: how many of an agent's
// messages it has never been handed.
type Inboxes interface {
	Unread(ctx context.Context, agent string) (int, error)
}

// Views is the read side the nudger decides on.
type Views interface {
	Agent(id string) (projections.Agent, bool)
	Roster() []*projections.Agent
	WaitSeq(ctx context.Context, seq uint64) error
}

// ErrConfig means the Config is incomplete.
var ErrConfig = errors.New("nudge: bad config")

// Config is what the nudger runs with.
type Config struct {
	Log     events.Log
	Views   Views
	Inboxes Inboxes
	Roles   roles.Config
	// Host is this gateway's host: it nudges only its own agents, so one
	// nudge is queued per message however many hosts run.
	Host string
	// Budget is the queue's budget gate (package budget's Checker): a
	// nudge is a turn the model answers — it reads its inbox and works on
	// what it finds — so it spends like any other and is not queued for
	// an agent out of budget. The messages wait in the inbox; the agent
	// is nudged once the budget frees. Nil: no budgets.
	Budget turns.Budget
	Logger *slog.Logger
	Now    func() time.Time
	NewID  func() string
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, fmt.Errorf("%w: no Log", ErrConfig))
	}
	if c.Views == nil {
		errs = append(errs, fmt.Errorf("%w: no Views", ErrConfig))
	}
	if c.Inboxes == nil {
		errs = append(errs, fmt.Errorf("%w: no Inboxes", ErrConfig))
	}
	if c.Host == "" {
		errs = append(errs, fmt.Errorf("%w: no Host", ErrConfig))
	}
	return errors.Join(errs...)
}

// Nudger queues nudges. Build it with New, run it with Run.
type Nudger struct {
	cfg    Config
	source string
	// nudged is, per agent, the last inbox message (stream sequence) a
	// nudge has covered. Only Run's goroutine touches it. A restart
	// forgets it: then an agent with unread messages is nudged once more.
	nudged map[string]uint64
	// held are the agents a nudge was refused for by the budget, and when
	// it frees: each is considered again then. Only Run's goroutine
	// touches it.
	held map[string]time.Time
}

// New returns a nudger over cfg. It does no I/O.
func New(cfg Config) (*Nudger, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = events.NewULIDSource(cfg.Now)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Nudger{cfg: cfg, source: "fleetd/" + cfg.Host + "/nudge", nudged: map[string]uint64{}, held: map[string]time.Time{}}, nil
}

// NudgeTimeout bounds a nudge turn, from queued to replied.
const NudgeTimeout = 30 * time.Minute

// Text is the nudge typed into a main's pane.
func Text(unread int) string {
	s := "s"
	if unread == 1 {
		s = ""
	}
	return fmt.Sprintf("[fleetd] %d new message%s in your fleet inbox: call the fleetd inbox tool to read them, then reply to or acknowledge each.", unread, s)
}

// Run nudges until ctx ends: once over the roster, then on every event of
// an agent that reads by pull (a message, a status change, a turn's end
// may each make a nudge due). A log that goes away (the stream lost, NATS
// gone) only pauses it: it follows again once it can, looking over the
// roster first for what it missed meanwhile. Without a role that reads by
// pull (the default roles have none) nothing can be due: it returns at
// once, rather than decode every agent event of the fleet to find that.
func (n *Nudger) Run(ctx context.Context) error {
	if !lo.SomeBy(lo.Values(n.cfg.Roles.Roles), func(r roles.Role) bool { return r.Inbox }) {
		return nil
	}
	restart.Loop(ctx, n.follow, func(err error, wait time.Duration) {
		n.cfg.Logger.Warn("nudge: following the log again", "err", err, "backoff", wait)
	})
	return nil
}

// follow considers every agent, then each one an event is about, until
// the follow ends.
func (n *Nudger) follow(ctx context.Context) error {
	fol, err := n.cfg.Log.Follow(ctx, events.Query{Subjects: []string{"fleet.agent.>"}, New: true})
	if err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	defer fol.Stop()
	for _, a := range n.cfg.Views.Roster() {
		n.consider(ctx, a.Agent)
	}
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		wake.Reset(n.untilFreed())
		select {
		case <-ctx.Done():
			return nil
		case <-wake.C:
			n.considerFreed(ctx)
		case <-fol.Done():
			return fmt.Errorf("follow ended: %w", fol.Err())
		case ev := <-fol.Events():
			if ev.Skipped() {
				continue
			}
			if _, ok := n.reader(ev.Subject); !ok {
				continue
			}
			// Decide on views that include the event.
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := n.cfg.Views.WaitSeq(wctx, ev.Seq)
			cancel()
			if err != nil {
				continue
			}
			n.consider(ctx, ev.Subject)
		}
	}
}

// recheckHeld bounds the wait for a held agent's budget to free, so a
// clock that jumps (a host suspended) does not leave it waiting long.
const recheckHeld = time.Minute

// untilFreed is how long until the first held agent's budget frees, at
// most recheckHeld; an hour when none is held.
func (n *Nudger) untilFreed() time.Duration {
	if len(n.held) == 0 {
		return time.Hour
	}
	now := n.cfg.Now()
	d := recheckHeld
	for _, at := range n.held {
		d = min(d, at.Sub(now))
	}
	return max(d, time.Millisecond)
}

// considerFreed considers again every held agent whose budget has freed.
func (n *Nudger) considerFreed(ctx context.Context) {
	now := n.cfg.Now()
	for agent, at := range n.held {
		if !now.Before(at) {
			delete(n.held, agent)
			n.consider(ctx, agent)
		}
	}
}

// reader is id's roster row when it is an agent of this host whose role
// reads by pull.
func (n *Nudger) reader(id string) (projections.Agent, bool) {
	a, ok := n.cfg.Views.Agent(id)
	if !ok || a.Host != n.cfg.Host || a.Exited {
		return a, false
	}
	r, ok := n.cfg.Roles.Roles[a.Role]
	return a, ok && r.Inbox
}

// consider queues a nudge for agent when one is due: it reads by pull, a
// message arrived since its last nudge, it is ready, and it has messages
// it was never handed.
func (n *Nudger) consider(ctx context.Context, agent string) {
	a, ok := n.reader(agent)
	if !ok {
		return
	}
	subject, err := events.AgentSubject(agent, events.TypeAgentInbox.Kind())
	if err != nil {
		return
	}
	latest, err := n.cfg.Log.LastSeq(ctx, subject)
	if err != nil || latest <= n.nudged[agent] {
		return
	}
	if !a.Ready() {
		return // a later event (idle, turn over) considers it again
	}
	unread, err := n.cfg.Inboxes.Unread(ctx, agent)
	if err != nil {
		n.cfg.Logger.Warn("nudge: inbox", "agent", agent, "err", err)
		return
	}
	if unread == 0 {
		n.nudged[agent] = latest // it has pulled them itself
		return
	}
	q, err := turns.Queuer{Log: n.cfg.Log, Source: n.source, Budget: n.cfg.Budget}.Queue(ctx, turns.Turn{
		ID: n.cfg.NewID(), To: agent, From: "fleetd", Text: Text(unread), Kind: events.TurnKindNudge,
		// A nudge never typed (the pane gone, the agent stuck) ends
		// rather than holding the agent's queue.
		Deadline: n.cfg.Now().Add(NudgeTimeout),
	})
	if be, ok := errors.AsType[*turns.BudgetError](err); ok {
		// Not nudged, not forgotten: considered again when it frees (or
		// at its next event), its messages waiting in the inbox.
		at := be.FreesAt
		if at.IsZero() {
			at = n.cfg.Now().Add(recheckHeld)
		}
		if _, was := n.held[agent]; !was {
			n.cfg.Logger.Info("nudge: held while the agent is out of budget", "agent", agent, "unread", unread, "err", err)
		}
		n.held[agent] = at
		return
	}
	if err != nil {
		n.cfg.Logger.Warn("nudge: queue", "agent", agent, "err", err)
		return
	}
	delete(n.held, agent)
	n.nudged[agent] = latest
	n.cfg.Logger.Info("nudged", "agent", agent, "unread", unread, "turn", q.ID)
	// The next decision sees the nudge queued: never two outstanding.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = n.cfg.Views.WaitSeq(wctx, q.Seq)
}
