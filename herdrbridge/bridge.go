package herdrbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

// agentSubjects is every agent event: the bridge folds them all, because
// the turn state of its own agents lives in the log.
const agentSubjects = "fleet.agent.>"

// BridgeConfig configures a Bridge: one per gateway, for the herdr of its
// host.
type BridgeConfig struct {
	// Host is this gateway's host token; the bridge owns exactly the agents
	// whose AgentRegistered.Host is Host.
	Host string
	// Client talks to the local herdr. When nil, one is made for SocketPath.
	Client     *herdrapi.Client
	SocketPath string
	// Log is the fleet's event log.
	Log events.Log
	// Roles gives each agent's env class (boundary checks) and spawn recipe.
	Roles roles.Config
	// Logger receives operational messages; default: discarded.
	Logger *slog.Logger
	// Now is the clock for deadlines and blocked time; default time.Now.
	Now func() time.Time
	// SubmitTimeout bounds each wait for proof that a typed prompt was
	// submitted (before the one extra Enter, and after it). Default 5 s.
	SubmitTimeout time.Duration
	// EnterDelay is the gap between text and Enter when typing into a pane
	// herdr does not recognise as an agent. Default and minimum 300 ms:
	// closer together, agents swallow the Enter as part of a paste.
	EnterDelay time.Duration
	// StartupGrace: an agent fleetd spawned gets its first prompt only once
	// its hooks reported the session started (an empty screen looks idle
	// to herdr before the agent has drawn its prompt or turned on
	// bracketed paste), or after this long without hearing from them.
	// Default 60s.
	StartupGrace time.Duration
	// HookGrace: when herdr shows a typed prompt was taken by an agent
	// whose hooks report in, wait this long for the hook's own
	// submitted event before recording herdr's evidence. Default 1s.
	HookGrace time.Duration
	// BlockedTimeout fails a turn in flight whose agent has shown blocked
	// (a permission or select form) for this long. Default 10 min.
	BlockedTimeout time.Duration
	// Limits bound how a text is typed before it goes as a file; the zero
	// value is DefaultLimits.
	Limits Limits
	// MaxDeferrals fails a turn herdr refused to type this many times
	// (each refusal sent it back to the head of its queue). Default 5.
	MaxDeferrals int
	// ReplyGrace: a submitted turn whose agent went idle with a Stop hook
	// for another prompt fails as unmatched_reply after this long, unless
	// its own reply arrives meanwhile. Default 3 s.
	ReplyGrace time.Duration
	// IdleGrace: a submitted turn whose agent has been idle this long with
	// no Stop hook at all fails as unmatched_reply. Default 30 s (a Stop
	// hook on a loaded machine was seen taking over 10 s).
	IdleGrace time.Duration
	// ExitGrace: the queued turns of an agent whose Claude Code session
	// ended fail as agent_exited when no session started again within
	// this long. Default 30 s.
	ExitGrace time.Duration
	// CommandTimeout bounds a command turn ("/compact" runs a model call)
	// and the "/clear" of a fresh-context role. Default 5 min.
	CommandTimeout time.Duration
	// AttentionAfter: an idle agent whose prompt box stays off screen this
	// long is marked as needing attention. Default 10 s.
	AttentionAfter time.Duration
	// ReconnectBackoff is the first wait after herdr's socket went away,
	// doubled per failed attempt up to MaxReconnectBackoff (default 250 ms
	// and 5 s).
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration
	// Poll is how often a delivery re-checks deadlines and herdr's
	// evidence of submission while nothing else happens. Default 200 ms.
	Poll time.Duration
	// Launch is the environment Spawn gives new panes.
	Launch Launch
	// SandboxStartWait bounds how long a spawn into a sandbox watches its
	// pane for the sandbox exiting at once, unless the agent's hooks
	// report its session started sooner. Default 20 s.
	SandboxStartWait time.Duration
	// ProcRoot is where process environments are read for boundary checks
	// and for whether a pane shows its shell (default /proc). herdr does
	// not expose a pane's processes, so a pane is checked only when they
	// are visible here.
	ProcRoot string
	// Metrics counts typed turns and, for the Client the bridge makes from
	// SocketPath, herdr requests and their time (a caller passing its own
	// Client does so with Metrics.ClientOptions). Default: fresh series.
	Metrics *Metrics
}

// Launch is what a spawned pane needs to reach the fleet: the FLEET_*
// variables of its hooks, and the hooks settings file for its agent's
// command line.
type Launch struct {
	NATSURL   string
	NATSCreds string
	// AgentCreds, when set, names each agent's own credentials file (""
	// for none), given to its pane instead of NATSCreds: a pane must not
	// hold its gateway's identity, which may write every agent's events.
	AgentCreds func(agent string) string
	// NATSToken is the NATS token for panes that get no credentials
	// (a server run with --token and without 'fleetd auth').
	NATSToken string
	FleetURL  string
	SpoolDir  string
	// Settings is the Claude Code settings file with fleetd's hooks,
	// substituted for {settings} in the role's command.
	Settings string
	// StateDir is fleetd's state directory: the agents' worktrees go in
	// its worktrees/, and a sandbox template may hide it ({state}).
	StateDir string
	// Fleetd is the fleetd executable the hooks settings run, which a
	// sandbox must let the agent run ({fleetd}); default this process's.
	Fleetd string
	// HookCommand is the shell command that runs fleetd's hook of a name
	// ("stop"), for kinds whose hooks fleetd writes per agent (Codex);
	// the gateway sets it from the same settings as Settings.
	HookCommand func(arg string) string
}

func (c *BridgeConfig) setDefaults() {
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.Client == nil && c.SocketPath != "" {
		c.Client = herdrapi.New(c.SocketPath, c.Metrics.ClientOptions()...)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SubmitTimeout <= 0 {
		c.SubmitTimeout = 5 * time.Second
	}
	if c.EnterDelay < DefaultEnterDelay {
		c.EnterDelay = DefaultEnterDelay
	}
	if c.HookGrace <= 0 {
		c.HookGrace = time.Second
	}
	if c.StartupGrace <= 0 {
		c.StartupGrace = time.Minute
	}
	if c.BlockedTimeout <= 0 {
		c.BlockedTimeout = 10 * time.Minute
	}
	if c.MaxDeferrals <= 0 {
		c.MaxDeferrals = 5
	}
	if c.ReplyGrace <= 0 {
		c.ReplyGrace = 3 * time.Second
	}
	if c.IdleGrace <= 0 {
		c.IdleGrace = 30 * time.Second
	}
	if c.ExitGrace <= 0 {
		c.ExitGrace = 30 * time.Second
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = 5 * time.Minute
	}
	if c.AttentionAfter <= 0 {
		c.AttentionAfter = DefaultAttentionAfter
	}
	if c.ReconnectBackoff <= 0 {
		c.ReconnectBackoff = 250 * time.Millisecond
	}
	if c.MaxReconnectBackoff < c.ReconnectBackoff {
		c.MaxReconnectBackoff = max(5*time.Second, c.ReconnectBackoff)
	}
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.SandboxStartWait <= 0 {
		c.SandboxStartWait = 20 * time.Second
	}
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	if c.Roles.Roles == nil {
		c.Roles = roles.Default()
	}
}

// Validate reports every problem with the configuration at once.
func (c *BridgeConfig) Validate() error {
	var errs []error
	if err := events.ValidToken(c.Host); err != nil {
		errs = append(errs, fmt.Errorf("bridge host: %w", err))
	}
	if c.Client == nil {
		errs = append(errs, errors.New("bridge: Client or SocketPath is required"))
	}
	if c.Log == nil {
		errs = append(errs, errors.New("bridge: Log is required"))
	}
	return errors.Join(errs...)
}

// Bridge is the gateway's side of herdr: it turns pane status into events,
// types the turns of its host's agents into their panes, one at a time and
// never twice, and spawns and adopts agent panes. Its state is folded from
// the log (fleet.agent.>, from the start), so a restarted bridge picks up
// where the last one stopped.
type Bridge struct {
	cfg    BridgeConfig
	client *herdrapi.Client
	log    *slog.Logger
	source string
	// roots are the panes' first processes, for the shell check.
	roots paneRoots

	mu       sync.Mutex
	book     *lifecycle.Book
	agents   map[string]*agentState
	applied  uint64
	caughtUp bool
	herdr    herdrLink
	// changed is closed (and made anew) when something every worker must
	// see changed — the link to herdr, the catch-up, the stream — or the
	// set of agents this bridge owns did (the herdr watcher's
	// subscriptions follow it). A change about one agent wakes only that
	// agent's waiters (agentState.changed): with a hundred agents, waking
	// every worker for each event of any agent kept the run queue full of
	// workers that looked and found nothing to do.
	changed chan struct{}
	runCtx  context.Context
	running bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup // delivery workers and the herdr watcher
	done    chan struct{}
	writes  *writeGate
	// stream is the incarnation of the stream the fold follows.
	stream time.Time
}

// herdrLink is the state of the bridge's connection to herdr.
type herdrLink int

const (
	linkUnknown herdrLink = iota
	linkUp
	linkDown
)

// agentState is what the bridge knows about one agent: its registration
// (any host), and for its own agents what herdr shows and what the log
// already says, so that nothing is appended twice.
type agentState struct {
	id, host, pane, role string
	registered, exited   bool
	// lastSeq is the stream sequence of the aggregate's last event: the
	// expected-last-sequence of the next guarded append.
	lastSeq uint64
	// wakes counts wakeLocked: every change of the agent's state wakes
	// it, so an unchanged count says nothing changed (lookedFor).
	wakes uint64
	// expecting: a turn is about to be queued here (Expect); look is the
	// look at the screen taken for it ahead (preLookFor).
	expecting bool
	look      preLook

	// What herdr showed in the current connection (fresh is false until
	// the first observation after a (re)connect).
	fresh       bool
	status      herdrapi.AgentStatus
	seq         uint64
	label       string // herdr's agent label; "" = not recognised
	workingSeq  uint64 // highest state_change_seq seen together with working
	blockedFrom time.Time

	// What the log says (or what this bridge appended and the log will say).
	logStatus    events.Status
	logStatusSeq uint64
	hookStatus   events.Status
	violation    string

	// origin, cwd, worktree and registeredAt come from the registration;
	// sessionSeen is set when the agent's hooks reported its session
	// started.
	origin, cwd  string
	worktree     string
	registeredAt time.Time
	sessionSeen  bool
	// registration is the agent's last AgentRegistered event as stored,
	// and started its session's start: written again into a stream that
	// was created again.
	registration, started events.Event

	// The Claude Code session as the hooks report it: live from a start
	// until an end (a /clear ends one and starts the next at once).
	sessionID      string
	sessionCwd     string
	sessionLive    bool
	sessionEndedAt time.Time
	// sessionEndReason says how the session ended when fleetd saw it
	// (the agent's process died without its SessionEnd hook).
	sessionEndReason string
	clears           int // sessions started by a /clear
	// launch tells the agent's command having exited from its not having
	// started yet, while no session started.
	launch launchWatch
	// deathSent marks the registration and session whose end fleetd
	// recorded itself; deathCheck is when a starting agent's pane is
	// next looked at for its shell.
	deathSent  string
	deathCheck time.Time
	// sessionEndClean: the session ended on purpose (an /exit, a logout),
	// which only the "always" restart policy restarts.
	sessionEndClean bool
	// restarts are the times of the gateway's restart decisions (folded
	// from the log, so a restarted gateway counts them too); restarting
	// is set while a restart runs; gaveUp once the role's limit was hit.
	restarts   []time.Time
	restarting bool
	gaveUp     bool

	// Since the turn in flight was typed: did herdr show the agent
	// working or blocked (it took the prompt), which sessions started; readySince is when herdr or the
	// hooks last showed it idle again (zero while it works).
	busySinceTyped     bool
	sessionsSinceTyped []string
	readySince         time.Time
	strayAt            time.Time // when a Stop for another prompt came

	// promptRefused: herdr refused agent.prompt (it does not see the
	// agent as the pane's foreground process), so the pane is typed into
	// as one it does not recognise.
	promptRefused bool
	attention     string // the attention reason the log holds
	// dialog is the open dialog the log holds (AgentDialog), answer an
	// AgentAnswer not yet typed; dialogTries and dialogLookAt pace the
	// reads of a blocked agent's screen for its dialog (dialogs).
	dialog       *Dialog
	answer       *answerRequest
	dialogTries  int
	dialogLookAt time.Time
	// dialogAt is when the open dialog was recorded, dialogPolicy set
	// once the role's deny_dialogs_after answered it.
	dialogAt     time.Time
	dialogPolicy bool
	kindName     string    // the agent's kind as registered ("" is claude)
	noBoxSince   time.Time // idle without a prompt box since
	backoff      time.Duration
	nextCheck    time.Time

	exitSent bool // AgentExited is appended or being appended
	worker   bool // a delivery worker runs for it
	// stopBy names who stopped the agent (Stop): its pane's end is then
	// theirs, recorded so, and never restarted. restartBy names who
	// restarts it (Restart) while that runs: its pane's end is part of it.
	stopBy, restartBy string
	// changed is closed (and made anew) when something about this agent
	// changed, and on every change of Bridge.changed's: its delivery
	// worker, resolvers and waits watch it.
	changed chan struct{}
}

// recognised reports whether the agent is typed into with agent.prompt:
// herdr names an agent in its pane, and has not refused agent.prompt for
// it — unless the agent has no hooks, which leave no other way to know it
// is idle.
func (a *agentState) recognised() bool { return a.statuses().Recognised() }

// statuses is what herdr and the hooks have said of the agent, as the
// decision to type weighs it.
func (a *agentState) statuses() Statuses {
	return Statuses{Labelled: a.label != "", Refused: a.promptRefused, Herdr: a.status,
		Hooked: a.sessionSeen, Hook: a.hookStatus, LazySession: a.kind().LazySession()}
}

// kind is the agent's room; one this fleetd does not know (registered by
// a newer one) reads as Claude Code here, and snapshot types nothing into
// it.
func (a *agentState) kind() Kind {
	if k, err := KindOf(a.kindName); err == nil {
		return k
	}
	return Claude{}
}

// sessionEnded reports whether the agent's hooks said its Claude Code
// session ended and none started since.
func (a *agentState) sessionEnded() bool { return a.sessionSeen && !a.sessionLive }

// Host is the host the bridge registers its agents under.
func (b *Bridge) Host() string { return b.cfg.Host }

// NewBridge returns a bridge for cfg. It does no I/O and starts nothing.
func NewBridge(cfg BridgeConfig) (*Bridge, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Bridge{
		cfg:     cfg,
		client:  cfg.Client,
		log:     cfg.Logger.With("component", "herdrbridge", "host", cfg.Host),
		source:  "fleetd/" + cfg.Host + "/herdr",
		book:    lifecycle.NewBook(),
		agents:  map[string]*agentState{},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
		writes: &writeGate{log: cfg.Logger.With("component", "herdrbridge", "host", cfg.Host), now: cfg.Now,
			poll: cfg.Poll, max: max(maxWriteBackoff, cfg.Poll)},
	}, nil
}

// Run follows the log, watches herdr (reconnecting with backoff while it is
// away) and delivers turns until ctx ends or Close is called. It returns
// nil on a clean stop.
func (b *Bridge) Run(ctx context.Context) error {
	b.mu.Lock()
	if b.running {
		b.mu.Unlock()
		return ErrBridgeRunning
	}
	b.running = true
	ctx, cancel := context.WithCancel(ctx)
	b.runCtx, b.cancel = ctx, cancel
	b.mu.Unlock()
	defer close(b.done)
	defer cancel()

	target, err := b.cfg.Log.LastSeq(ctx, agentSubjects)
	if err != nil {
		return fmt.Errorf("herdr bridge: %w", err)
	}
	b.wg.Go(func() { b.watchHerdr(ctx) })
	err = b.follow(ctx, target)
	cancel()
	b.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Close stops Run and waits for it. It is idempotent and safe to call when
// Run never started.
func (b *Bridge) Close() error {
	b.mu.Lock()
	cancel, running := b.cancel, b.running
	b.mu.Unlock()
	if !running {
		return nil
	}
	if cancel != nil {
		cancel()
	}
	<-b.done
	return nil
}

// follow folds the agent events of the log, from the start, re-following
// from the next sequence when the follower fails. The bridge counts as
// caught up once it applied target (the log's end at boot), or once the
// follower went quiet (a skipped message can sit at the end).
func (b *Bridge) follow(ctx context.Context, target uint64) error {
	if target == 0 {
		b.setCaughtUp()
	}
	backoff := b.cfg.ReconnectBackoff
	failing := false
	retry := func(what string, err error) bool {
		if !failing {
			failing = true
			b.log.Warn(what+"; retrying with backoff", "err", err)
		}
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, b.cfg.MaxReconnectBackoff)
		return true
	}
	for ctx.Err() == nil {
		regs, err := b.anchor(ctx)
		if err != nil {
			if ctx.Err() != nil || !retry("read the stream's state", err) {
				return nil
			}
			continue
		}
		b.reregister(ctx, regs)
		b.mu.Lock()
		from := b.applied + 1
		b.mu.Unlock()
		f, err := b.cfg.Log.Follow(ctx, events.Query{Subjects: []string{agentSubjects}, FromSeq: from, Buffer: 1024})
		if err != nil {
			if ctx.Err() != nil || !retry("follow the log", err) {
				return nil
			}
			continue
		}
		if failing {
			failing = false
			b.log.Info("following the log again", "from", from)
		}
		backoff = b.cfg.ReconnectBackoff
		quiet := time.NewTimer(500 * time.Millisecond)
	loop:
		for {
			select {
			case ev, ok := <-f.Events():
				if !ok {
					break loop
				}
				b.apply(ev)
				if ev.Seq >= target {
					b.setCaughtUp()
				}
				quiet.Reset(500 * time.Millisecond)
			case <-quiet.C:
				b.setCaughtUp()
			case <-ctx.Done():
				break loop
			}
		}
		quiet.Stop()
		f.Stop()
		if ctx.Err() == nil && !retry("the log follower stopped", f.Err()) {
			return nil
		}
	}
	return nil
}

// anchor makes sure the bridge follows the stream that is there now. A
// stream created again (its sequences restart) is followed from its first
// event: the bridge keeps its agents and open turns, and every agent's
// guard sequence starts again at 0, since the new stream holds nothing of
// theirs yet.
//
// It returns the registrations of this host's live agents when the stream
// is a new one, for reregister.
func (b *Bridge) anchor(ctx context.Context) ([]events.Event, error) {
	st, err := b.cfg.Log.State(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.stream.IsZero():
		b.stream = st.Created
	case !b.stream.Equal(st.Created):
		b.log.Warn("the stream is a new one (created again); delivery keeps its agents and turns and follows it from its start",
			"was_applied", b.applied, "from", max(st.FirstSeq, 1))
		b.stream = st.Created
		b.applied = max(st.FirstSeq, 1) - 1
		var regs []events.Event
		for _, a := range b.agents {
			a.lastSeq = 0
			if b.ownedLocked(a) && a.registration.ID != "" {
				regs = append(regs, a.registration)
				if a.sessionLive && a.started.ID != "" {
					regs = append(regs, a.started)
				}
			}
		}
		b.notifyLocked()
		return regs, nil
	}
	return nil, nil
}

// reregister writes this host's live agents' registrations (and their
// live sessions' starts) into a stream that was created again, each
// exactly as it was stored (same id, time and data), so that a restart,
// another host or `nats` knows them again.
// Folds that saw the original take the copy as the same event: the
// projections drop it by its id, and for the bridge it changes nothing.
func (b *Bridge) reregister(ctx context.Context, regs []events.Event) {
	for _, ev := range regs {
		if !b.writes.wait(ctx) {
			return
		}
		ev.Seq, ev.NATSSubject = 0, ""
		_, err := b.cfg.Log.Append(ctx, ev)
		b.writes.done(ctx, err)
		if err != nil {
			b.warnWrite("register again in the new stream", err, "agent", ev.Subject)
			continue
		}
		b.log.Info("registered again in the new stream", "agent", ev.Subject)
	}
}

// CaughtUp reports whether the bridge has folded the log as it stood when
// Run started: retention waits for it, so a trim never overtakes the
// bridge's read from the log's start.
func (b *Bridge) CaughtUp() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.caughtUp
}

func (b *Bridge) setCaughtUp() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.caughtUp {
		b.caughtUp = true
		b.notifyLocked()
	}
}

// apply folds one event into the book and the agents' state, and starts a
// delivery worker for an agent that became this host's.
func (b *Bridge) apply(ev events.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Seq > b.applied {
		b.applied = ev.Seq
	}
	t, changed := b.book.Apply(ev)
	a := b.agentLocked(ev.Subject)
	a.lastSeq = max(a.lastSeq, ev.Seq)
	// Every event on fleet.agent.X.> is about X alone: a turn changes
	// agent only by events on the agent's own subject (queued, released).
	defer b.wakeLocked(a)
	switch d := ev.Data.(type) {
	case events.AgentRegistered:
		if a.registered && ev.ID == a.registration.ID {
			// The same registration again (written into a stream created
			// again): nothing new about the agent.
			break
		}
		if d.Pane != a.pane || d.Host != a.host {
			a.fresh, a.status, a.seq, a.label, a.workingSeq, a.blockedFrom = false, "", 0, "", 0, time.Time{}
			a.logStatus, a.logStatusSeq, a.violation = "", 0, ""
		}
		a.registered, a.exited, a.exitSent = true, false, false
		a.registration = ev
		a.host, a.pane, a.role, a.cwd, a.worktree, a.kindName = d.Host, d.Pane, d.Role, d.Cwd, d.Worktree.Path, d.Kind
		a.origin, a.registeredAt, a.sessionSeen, a.gaveUp = d.Origin, ev.Time, false, false
		a.stopBy = "" // a new registration is a new start
		a.launch = launchWatch{began: ev.Time}
		// herdr recognises an agent by its pane's foreground process,
		// which for a sandboxed one is the sandbox: type into it as into
		// a pane herdr does not recognise, from the first turn.
		a.sessionLive, a.sessionID, a.sessionCwd, a.promptRefused = false, "", "", d.Sandbox != ""
		a.attention = "" // the old pane's; the projections' fold clears it too
		a.resetBackoff()
		b.startWorkerLocked(a)
		b.ownersChangedLocked()
	case events.AgentExited:
		a.exited = true
		b.ownersChangedLocked()
	case events.AgentRestart:
		switch d.State {
		case events.RestartRestarting:
			a.restarts = append(a.restarts, ev.Time)
		case events.RestartGaveUp:
			a.gaveUp = true
		}
	case events.AgentSession:
		b.sessionLocked(a, ev, d)
	case events.AgentAttention:
		a.attention = d.Reason
	case events.AgentDialog:
		switch d.State {
		case events.DialogOpen:
			a.dialog = &Dialog{Title: d.Title, Detail: d.Detail, Question: d.Question, Options: d.Options}
			a.dialogAt, a.dialogPolicy = ev.Time, false
		case events.DialogUnanswered:
			a.answer = nil
		default:
			a.dialog, a.answer = nil, nil
		}
	case events.AgentAnswer:
		a.answer = &answerRequest{option: d.Option, by: d.By}
	case events.AgentStatusChanged:
		if d.Status != events.StatusBlocked {
			// Not (or no longer) blocked: the next blocked spell is
			// looked at afresh.
			a.dialog, a.dialogTries = nil, 0
		}
		switch d.Source {
		case "herdr":
			if ev.Seq > a.logStatusSeq {
				a.logStatus, a.logStatusSeq = d.Status, ev.Seq
			}
			if d.Violation != "" {
				a.violation = d.Violation
			}
		case "hook":
			a.hookStatus = d.Status
			b.readyLocked(a, d.Status.Ready())
		case StatusSourceScreen:
			if d.Status == events.StatusIdle && (a.hookStatus == events.StatusBlocked || a.hookStatus == events.StatusWorking) {
				// A dialog answered No stopped the turn, and no hook
				// reports the end of a stopped turn: the hooks' last word
				// (blocked, or working for a CLI that says nothing of a
				// dialog) is over.
				a.hookStatus = d.Status
				b.readyLocked(a, true)
			}
		}
	case events.AgentTyped:
		if changed && t.Agent == ev.Subject && t.State == lifecycle.StateTyped && t.Enter == 0 {
			// A new turn in flight: what the agent shows from now on is
			// about it.
			a.busySinceTyped, a.sessionsSinceTyped, a.readySince = false, nil, time.Time{}
		}
	case events.AgentReplied:
		if changed && t.StrayReplies > 0 && !t.State.Final() {
			a.strayAt = b.cfg.Now()
		}
	}
	if changed && t.State.Final() {
		b.book.Forget(t.ID)
	}
}

// sessionLocked follows the agent's Claude Code session from its hooks. An
// end only counts for the session that is current: a /clear ends the old
// session and starts a new one at once, and the two hooks race.
func (b *Bridge) sessionLocked(a *agentState, ev events.Event, d events.AgentSession) {
	switch d.State {
	case "started":
		if a.sessionLive && ev.ID == a.started.ID {
			return // the same start again (a stream created again)
		}
		a.started = ev
		a.sessionSeen, a.sessionLive, a.sessionID = true, true, d.SessionID
		if events.ValidSessionID(d.SessionID) != nil {
			// Not Claude Code's (its hook refuses such an id; the agent
			// wrote the event some other way): a restart starts afresh
			// rather than hand it to --resume.
			a.sessionID = ""
		}
		if d.Cwd != "" {
			a.sessionCwd = d.Cwd
		}
		if d.Source == "clear" {
			a.clears++
		}
		a.sessionsSinceTyped = append(a.sessionsSinceTyped, d.Source)
		if a.attention != "" {
			// Attention belongs to a pane and a session: the log's fold
			// (projections) clears it on a new session too, and the
			// next look records it again if it still holds.
			a.attention = ""
			a.resetBackoff() // a new session: look again now
		}
	case "ended":
		if d.Reason == "clear" || (d.SessionID != "" && a.sessionID != "" && d.SessionID != a.sessionID) {
			return
		}
		died := d.Reason == SessionEndDied
		if !a.sessionLive && (a.sessionSeen || !died) {
			return // its hook and fleetd both saw the end: the first one counts
		}
		// A process that died before its session started ends "it" too.
		a.sessionSeen, a.sessionLive, a.sessionEndedAt, a.sessionEndReason = true, false, ev.Time, ""
		a.sessionEndClean = d.Reason == "prompt_input_exit" || d.Reason == "logout"
		if died {
			a.sessionEndReason = "the agent's process died: its shell is back in the pane's foreground"
		}
	}
}

// readyLocked notes that herdr or the hooks showed the agent ready (idle
// or done) or not, for settling a turn whose reply is not coming.
func (b *Bridge) readyLocked(a *agentState, ready bool) {
	switch {
	case !ready:
		a.readySince = time.Time{}
	case a.readySince.IsZero():
		a.readySince = b.cfg.Now()
	}
}

func (b *Bridge) agentLocked(id string) *agentState {
	a, ok := b.agents[id]
	if !ok {
		a = &agentState{id: id, changed: make(chan struct{})}
		b.agents[id] = a
	}
	return a
}

// ownedLocked reports whether the bridge delivers to a: registered on this
// host, not exited, and not being retired.
func (b *Bridge) ownedLocked(a *agentState) bool {
	return a != nil && a.registered && !a.exited && !a.exitSent && a.host == b.cfg.Host && a.pane != ""
}

func (b *Bridge) startWorkerLocked(a *agentState) {
	if !b.ownedLocked(a) || a.worker || b.runCtx == nil || b.runCtx.Err() != nil {
		return
	}
	a.worker = true
	ctx, id := b.runCtx, a.id
	b.wg.Go(func() { b.deliverLoop(ctx, id) })
}

// notifyLocked wakes everyone waiting for a change of state: every
// agent's waiters and the herdr watcher.
func (b *Bridge) notifyLocked() {
	b.ownersChangedLocked()
	for _, a := range b.agents {
		b.wakeLocked(a)
	}
}

// ownersChangedLocked wakes the waiters of Bridge.changed (the herdr
// watcher) without waking every agent's.
func (b *Bridge) ownersChangedLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// wakeLocked wakes the waiters of one agent.
func (b *Bridge) wakeLocked(a *agentState) {
	a.wakes++
	close(a.changed)
	a.changed = make(chan struct{})
}

// waitApplied waits until the follower applied seq, an event about agent
// the bridge appended (so a decision taken next sees it), or a bound
// passes.
func (b *Bridge) waitApplied(ctx context.Context, agent string, seq uint64) {
	b.waitFor(ctx, agent, 5*time.Second, func() bool { return b.applied >= seq })
}

// waitFor re-checks cond, under b.mu, on every change of the agent's
// state until it holds; it reports false when ctx ends or bound passes
// first. cond must depend only on what changes wake the agent: its own
// events (and the position they are folded to) and the bridge-wide state.
func (b *Bridge) waitFor(ctx context.Context, agent string, bound time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ok, ch := cond(), b.agentLocked(agent).changed
		b.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		}
	}
}

// catchUp is what to do after ErrConcurrency: someone else wrote to the
// agent first, so wait until the fold holds the aggregate's real last
// event before deciding again. If the follower cannot get there because
// every message past the fold's position is one readers skip, the real
// sequence is taken as known. It is never taken while a real event is
// still unfolded: a follower lagging behind (a cluster electing a new
// leader, say) would then pass the guard of a decision taken on stale
// state, and a turn could be typed twice.
func (b *Bridge) catchUp(ctx context.Context, agent string) {
	subject, err := events.AgentAll(agent)
	if err != nil {
		return
	}
	last, err := b.cfg.Log.LastSeq(ctx, subject)
	if err != nil {
		b.log.Warn("read last sequence", "agent", agent, "err", err)
		sleep(ctx, b.cfg.Poll)
		return
	}
	b.mu.Lock()
	a := b.agentLocked(agent)
	b.mu.Unlock()
	if b.waitFor(ctx, agent, time.Second, func() bool { return a.lastSeq >= last }) || ctx.Err() != nil {
		return
	}
	b.mu.Lock()
	known := a.lastSeq
	b.mu.Unlock()
	if b.onlySkipped(ctx, subject, known+1, last) {
		b.mu.Lock()
		a.lastSeq = max(a.lastSeq, last)
		b.mu.Unlock()
	}
}

// onlySkipped reports whether subject holds no valid event in [from, to]:
// whatever is there is what readers skip, so the fold will never apply it.
func (b *Bridge) onlySkipped(ctx context.Context, subject string, from, to uint64) bool {
	for ev, err := range b.cfg.Log.Read(ctx, events.Query{Subjects: []string{subject}, FromSeq: from}) {
		if err != nil {
			return false
		}
		return ev.Seq > to
	}
	return true
}

// append writes one event about an agent (or the host) as this bridge,
// through the write gate: while the log refuses writes, it first waits
// the gate's backoff.
func (b *Bridge) append(ctx context.Context, subject, turn string, d events.Data, opts ...events.AppendOption) (events.Ack, error) {
	if !b.writes.wait(ctx) {
		return events.Ack{}, ctx.Err()
	}
	ev := events.Event{Subject: subject, Source: b.source, CorrelationID: turn, Time: b.cfg.Now(), Data: d}
	ack, err := b.cfg.Log.Append(ctx, ev, opts...)
	b.writes.done(ctx, err)
	return ack, err
}

// guard is the expected-last-sequence option for a write that depends on
// the agent's state as folded so far.
func guard(agent string, lastSeq uint64) events.AppendOption {
	subject, _ := events.AgentAll(agent)
	return events.ExpectLastSeqFor(lastSeq, subject)
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
