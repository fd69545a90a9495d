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
	Host   string
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
	return &Nudger{cfg: cfg, source: "fleetd/" + cfg.Host + "/nudge", nudged: map[string]uint64{}}, nil
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
	for {
		select {
		case <-ctx.Done():
			return nil
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
	q, err := turns.Queuer{Log: n.cfg.Log, Source: n.source}.Queue(ctx, turns.Turn{
		ID: n.cfg.NewID(), To: agent, From: "fleetd", Text: Text(unread), Kind: events.TurnKindNudge,
		// A nudge never typed (the pane gone, the agent stuck) ends
		// rather than holding the agent's queue.
		Deadline: n.cfg.Now().Add(NudgeTimeout),
	})
	if err != nil {
		n.cfg.Logger.Warn("nudge: queue", "agent", agent, "err", err)
		return
	}
	n.nudged[agent] = latest
	n.cfg.Logger.Info("nudged", "agent", agent, "unread", unread, "turn", q.ID)
	// The next decision sees the nudge queued: never two outstanding.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = n.cfg.Views.WaitSeq(wctx, q.Seq)
}
