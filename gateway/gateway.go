package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/samber/lo"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/nudge"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/retention"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/router"
)

// Gateway is one host's fleetd: the embedded server (or a connection to an
// external one), the event log, and the components wired over it. The e2e
// tests start it whole, on port 0 and a temp dir.
type Gateway struct {
	cfg Config
	log *slog.Logger

	srv *embeddednats.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	// viewsJS is the projections' own connection, for their view writes
	// and reads: a catch-up's bulk reads of the log come on nc, and its
	// writes' acknowledgements no longer queue behind thousands of the
	// log's messages in one connection's read loop, on either side
	// (a rebuild of 50,000 events with SyncAlways: 3-5 % sooner).
	viewsNC *nats.Conn
	viewsJS jetstream.JetStream
	// adminNC and adminJS are the admin key's connection (AdminCreds).
	adminNC *nats.Conn
	adminJS jetstream.JetStream
	// Denials logs the permission violations NATS reports to nc and tells
	// provisioning when its identity may not create what it tried.
	denials *Denials
	// keepStreams says this gateway's identity does not edit the fabric's
	// streams (see provision).
	keepStreams bool
	// Log is the event log; Views the projections over it; Bridge the
	// herdr gateway (nil with NoHerdr). Set once Start returned.
	Log    events.Log
	Views  projections.Projector
	Bridge *herdrbridge.Bridge
	Roles  roles.Config
	// Sessions reaps this host's idle session panes and orphaned
	// incarnations (nil with NoHerdr).
	Sessions *orchestrator.Sessions
	// spawner starts this host's panes for sessions and the shim (nil
	// with NoHerdr).
	spawner *SessionSpawner
	// Watcher says whether the log is there and its store has room;
	// Compactor applies the retention policy.
	Watcher   *events.Watcher
	Compactor *retention.Compactor
	// Inboxes are the agents' durable inboxes: the shim serves them, the
	// notifier and the nudger post to and watch them.
	Inboxes *inbox.Inboxes
	policy  retention.Policy
	turnTTL time.Duration

	// Dashboard is the web dashboard the shim serves at / (set once
	// Start returned).
	Dashboard *dashboard.Server

	shim         *leadshim.Server
	httpAddr     string
	herdrSocket  string
	herdrMetrics *herdrbridge.Metrics

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	done   chan struct{}
	// announced: host up was appended, so Close appends host down.
	announced bool
	errMu     sync.Mutex
	err       error
}

// New returns a gateway that is not yet running. It does no I/O; cfg's
// defaults are applied and it is validated when the gateway starts.
func New(cfg Config) *Gateway {
	cfg.setDefaults()
	return &Gateway{cfg: cfg, log: cfg.Logger, done: make(chan struct{}), denials: NewDenials(cfg.Logger)}
}

// Run starts the gateway, calls ready (if set) once it serves, and serves
// until ctx ends or a component fails; whatever it started is closed
// before it returns. A nil error means ctx ended.
func (g *Gateway) Run(ctx context.Context, ready func(*Gateway)) error {
	if err := g.Start(ctx); err != nil {
		return err
	}
	if ready != nil {
		ready(g)
	}
	select {
	case <-ctx.Done():
		return g.Close()
	case <-g.Done():
		err := g.Err()
		return errors.Join(err, g.Close())
	}
}

// Start brings the gateway up and returns once it serves.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.cfg.Validate(); err != nil {
		return err
	}
	host := g.cfg.Host
	if g.cfg.Roles != nil {
		g.Roles = *g.cfg.Roles
	} else {
		rc, err := roles.Load(g.cfg.RolesFile)
		if err != nil {
			return err
		}
		g.Roles = rc
	}
	policy, turnTTL, err := g.cfg.retention()
	if err != nil {
		return err
	}
	g.policy, g.turnTTL = policy, turnTTL
	if err := g.connect(ctx); err != nil {
		return err
	}
	if g.cfg.Replicas == 0 {
		g.cfg.Replicas = 1
		if g.cfg.ExternalURL == "" && g.cfg.NATS.Clustered() {
			g.cfg.Replicas = 3
		}
	}
	replicas := g.cfg.Replicas
	if err := g.provision(ctx, replicas); err != nil {
		g.shutdownNATS()
		return err
	}
	// The server's store limit is known for a standalone embedded server
	// only: in a cluster, usage counts every replica.
	var maxStore int64
	if g.cfg.ExternalURL == "" && !g.cfg.NATS.Clustered() {
		maxStore = g.cfg.NATS.MaxStore
	}
	watchJS, recreate := g.js, g.cfg.RecreateStream
	if admin := g.streamAdmin(); admin != nil {
		watchJS = admin
	} else if recreate > 0 {
		g.log.Info("a lost FLEET stream is not created again here: a gateway key may not; the admin recreates it ('fleetd provision') and this host resumes by itself")
		recreate = 0
	}
	g.Watcher, err = events.NewWatcher(events.WatcherConfig{
		JS: watchJS, MaxStore: maxStore, RecreateAfter: recreate,
		Stream: events.StreamOptions{Replicas: replicas}, Logger: g.log,
	})
	if err != nil {
		g.shutdownNATS()
		return err
	}
	g.Log = events.New(g.js, events.Options{
		Source:   "fleetd/" + host + "/gateway",
		Registry: events.NewRegistry(events.WithLimits(events.Limits{Text: textLimit(g.cfg.MaxText)})),
		OnSkip: func(subject string, seq uint64, err error) {
			g.log.Warn("skipped a message that is not a valid event", "subject", subject, "seq", seq, "err", err)
		},
		OnResume: func(filters []string, cause error) {
			g.log.Info("a log reader made its consumer again and reads on", "subjects", filters, "cause", cause)
		},
		OnRetry: func(filters []string, waited time.Duration, err error) {
			g.log.Warn("a log reader cannot make its consumer yet; trying again", "subjects", filters, "waited", waited.Round(time.Millisecond), "err", err)
		},
		OnAppend: g.Watcher.Observe,
		// The embedded server syncs each write with SyncAlways: appends
		// made together (a fan-out's queued and typed events) are
		// stored as one batch, synced once.
		CoalesceAppends: g.cfg.ExternalURL == "" && g.cfg.NATS.SyncAlways,
		// A replicated stream stages a batch in memory: two are worth one.
		CoalesceMin: lo.Ternary(replicas > 1, 2, 0),
	})
	if err := g.startComponents(ctx); err != nil {
		g.Close()
		return err
	}
	return nil
}

// textLimit is the bound on events' free-text fields for a host that takes
// turn texts up to maxText: the default, or maxText and the same margin
// when --max-text is larger. Every host reading those turns needs it too.
func textLimit(maxText int) int {
	return max(events.DefaultTextLimit, maxText+events.DefaultTextLimit-leadshim.DefaultMaxText)
}

// startComponents runs the projections, the router, the herdr bridge, the
// hook spool replayer and the lead shim as one group: the first to fail
// stops the gateway (Done, Err).
func (g *Gateway) startComponents(ctx context.Context) error {
	host := g.cfg.Host
	runCtx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	replicas := max(g.cfg.Replicas, 1)

	g.goRun("log watcher", g.Watcher.Run, runCtx)
	var maxBatch int
	if g.srv != nil {
		maxBatch = g.srv.MaxBatch()
	}
	g.Views = projections.New(g.Log, g.viewsJS, projections.Options{Replicas: replicas, Logger: g.log, HostTTL: g.cfg.HostTTL, TurnTTL: g.turnTTL,
		// The embedded server fsyncs each write with SyncAlways: a batch
		// is synced once (what an external server does is not known).
		BatchWrites: g.cfg.ExternalURL == "" && g.cfg.NATS.SyncAlways, MaxBatch: maxBatch, KeepStreams: g.keepStreams})
	g.goRun("projections", g.whileForming(g.Views.Run), runCtx)
	select {
	case <-g.Views.Ready():
	case <-g.done:
		return g.Err()
	case <-ctx.Done():
		return ctx.Err()
	}

	// Budgets: every host judges the same folded usage; each writes the
	// warnings of its own agents, and of roles when it is first. The same
	// Checker gates every path that queues a turn: the shim's sends, the
	// jobs' tasks and the nudges.
	budgets := &budget.Checker{Roles: g.Roles, Views: g.Views}
	g.goRun("budget warner", (&budget.Warner{Log: g.Log, Views: g.Views, Checker: budgets, Host: host, Logger: g.log}).Run, runCtx)

	rt, err := router.New(router.Config{Log: g.Log, JS: g.js, Views: g.Views, Roles: g.Roles, Budgets: budgets, Host: host, Logger: g.log})
	if err != nil {
		return err
	}
	g.goRun("router", rt.Run, runCtx)

	var shimTLS *tls.Config
	if g.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(g.cfg.TLSCert, g.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("lead shim: TLS: %w", err)
		}
		shimTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", g.cfg.HTTP)
	if err != nil {
		return fmt.Errorf("lead shim: %w", err)
	}
	g.httpAddr = ln.Addr().String()
	g.herdrMetrics = herdrbridge.NewMetrics()
	g.Dashboard, err = dashboard.New(dashboard.Config{Log: g.Log, Fleet: g.Views, Budgets: budgets, Host: host, Version: g.cfg.Version, Logger: g.log})
	if err != nil {
		ln.Close()
		return err
	}
	g.Inboxes, err = inbox.New(inbox.Config{Log: g.Log, JS: g.js, Source: "fleetd/" + host + "/inbox"})
	if err != nil {
		ln.Close()
		return err
	}
	g.goRun("inbox notifier", (&inbox.Notifier{Inboxes: g.Inboxes, JS: g.js, Turns: g.Views, Logger: g.log}).Run, runCtx)
	nudger, err := nudge.New(nudge.Config{Log: g.Log, Views: g.Views, Inboxes: g.Inboxes, Roles: g.Roles, Host: host, Budget: budgets, Logger: g.log})
	if err != nil {
		ln.Close()
		return err
	}
	g.goRun("nudger", nudger.Run, runCtx)
	spool := filepath.Join(g.DataDir(), "spool")
	rp := &claudehook.Replayer{Dir: spool, Log: g.Log, Interval: 10 * time.Second, OnReplay: func(n int, err error) {
		switch {
		case err != nil:
			g.log.Warn("the hooks' spool", "dir", spool, "replayed", n, "err", err)
		case n > 0:
			g.log.Info("replayed spooled hook events", "events", n)
		}
	}}
	g.goRun("hook spool replayer", rp.Run, runCtx)

	if !g.cfg.NoHerdr {
		if err := g.startBridge(runCtx, spool); err != nil {
			ln.Close()
			return err
		}
	}

	// The shim comes last: its spawns and jobs need the bridge. Until it
	// serves, clients queue on the listener.
	// Without herdr both spawners stay nil interfaces (not nil pointers):
	// spawns are 503 and jobs bind live sessions only.
	var spawner leadshim.Spawner
	var sessions orchestrator.Spawner
	var agents leadshim.Agents
	var expect func(string)
	if g.spawner != nil {
		spawner, sessions, agents = &ShimSpawner{Sessions: g.spawner}, g.spawner, &ShimAgents{Sessions: g.spawner}
		expect = g.spawner.Bridge.Expect
	}
	runner, err := orchestrator.NewRunner(orchestrator.RunnerConfig{Log: g.Log, Views: g.Views, Spawner: sessions, Budgets: budgets, Logger: g.log})
	if err != nil {
		ln.Close()
		return err
	}
	g.goRun("job runner", runner.Run, runCtx)
	g.shim, err = leadshim.New(leadshim.Config{
		Inbox: g.Inboxes, Dashboard: g.Dashboard, Spawner: spawner, Agents: agents, Jobs: ShimJobs{Runner: runner}, Expect: expect,
		Addr: g.cfg.HTTP, Listener: ln, Token: g.cfg.Token, TLS: shimTLS, Log: g.Log, Views: g.Views, Roles: g.Roles, Budgets: budgets,
		NC: g.nc, Logger: g.log, Host: host, Collectors: g.herdrMetrics.Collectors(), MaxText: g.cfg.MaxText,
		MaxEventReaders: g.cfg.MaxEventReaders, MaxConns: g.cfg.MaxConns, Health: g.Health,
		Runtime: g.runtime(), RuntimeReason: g.cfg.RuntimeReason,
	})
	if err != nil {
		ln.Close()
		return err
	}
	g.goRun("lead shim", g.shim.Run, runCtx)

	if admin := g.streamAdmin(); admin != nil {
		g.Compactor, err = retention.New(retention.Config{
			JS: admin, Log: g.Log, Views: g.Views, Policy: g.policy, Logger: g.log, Ready: g.bridgeCaughtUp,
		})
		if err != nil {
			return err
		}
		g.goRun("retention", g.Compactor.Run, runCtx)
	} else {
		g.log.Info("retention runs where the admin key is (fleetd up --admin-creds): a gateway key may not trim FLEET")
	}

	if _, err := g.Log.Append(ctx, g.hostUp(false)); err != nil {
		return fmt.Errorf("announce host: %w", err)
	}
	g.announced = true
	g.wg.Add(2)
	go func() { defer g.wg.Done(); g.heartbeat(runCtx) }()
	go func() { defer g.wg.Done(); g.onHealth(runCtx, rp) }()
	return nil
}

// Health is nil while the log takes new work, else why not: the log's
// health as the watcher sees it, or the views still moving to a stream
// that was created again.
func (g *Gateway) Health() error {
	h := g.Watcher.Health()
	if err := h.Err(); err != nil {
		return err
	}
	if at := g.Views.Horizon().Stream; !h.Stream.Created.IsZero() && !at.IsZero() && !at.Equal(h.Stream.Created) {
		return fmt.Errorf("%w: the %s stream was created again; the views are moving to it", events.ErrUnavailable, events.Stream)
	}
	return nil
}

// bridgeCaughtUp is retention's Ready: the bridge folds the log from its
// start, so no trim may overtake it while it reads.
func (g *Gateway) bridgeCaughtUp() bool { return g.Bridge == nil || g.Bridge.CaughtUp() }

// onHealth acts on the log's health as it changes: a store full or
// nearly so brings a retention sweep forward; a log that takes writes
// again has the hook spool replayed at once, since the turns in flight
// wait for what their hooks spooled meanwhile.
func (g *Gateway) onHealth(ctx context.Context, rp *claudehook.Replayer) {
	was := events.HealthOK
	for {
		ch := g.Watcher.Changed()
		code := g.Watcher.Health().Code
		switch {
		case (code == events.HealthStoreFull || code == events.HealthStoreLow) && g.Compactor != nil:
			g.Compactor.Wake()
		case code == events.HealthOK && was != events.HealthOK:
			rp.Wake()
		}
		was = code
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

func (g *Gateway) startBridge(runCtx context.Context, spool string) error {
	socket := g.cfg.HerdrPath
	if socket == "" {
		var err error
		if socket, err = herdrapi.SocketPath(os.Getenv); err != nil {
			return fmt.Errorf("herdr socket: %w (or run with --no-herdr)", err)
		}
	}
	g.herdrSocket = socket
	g.log.Info("agent runtime", "runtime", g.runtime(), "socket", socket, "why", g.cfg.RuntimeReason)
	settings := filepath.Join(g.DataDir(), "claude-settings.json")
	exe, err := writeHookSettings(settings)
	if err != nil {
		return err
	}
	br, err := herdrbridge.NewBridge(herdrbridge.BridgeConfig{
		Host: g.cfg.Host, SocketPath: socket, Log: g.Log, Roles: g.Roles, Logger: g.log,
		SubmitTimeout: g.cfg.SubmitTimeout, StartupGrace: g.cfg.StartupGrace, ExitGrace: g.cfg.ExitGrace, Metrics: g.herdrMetrics,
		Launch: herdrbridge.Launch{
			NATSURL: g.NATSURL(), NATSCreds: g.cfg.Creds, AgentCreds: PaneCreds(g.cfg.Creds), NATSToken: g.PaneToken(),
			FleetURL: g.ShimURL(),
			SpoolDir: spool, Settings: settings, StateDir: g.DataDir(), Fleetd: exe,
			HookCommand: claudehook.SettingsConfig{Fleetd: exe}.Command,
		},
	})
	if err != nil {
		return err
	}
	g.Bridge = br
	g.goRun("herdr bridge", br.Run, runCtx)

	// One fleet-wide reaper per host, for this host's panes only; the
	// shim's spawns and jobs start panes through the same spawner.
	g.spawner = &SessionSpawner{Bridge: br, Herdr: herdrapi.New(socket, g.herdrMetrics.ClientOptions()...), Agents: g.Views, Host: g.cfg.Host}
	g.Sessions, err = orchestrator.NewSessions(orchestrator.SessionConfig{
		Log: g.Log, Views: g.Views, AllTiers: true, Host: g.cfg.Host, IdleTTL: g.cfg.IdleTTL,
		Spawner: g.spawner,
		OnError: func(err error) { g.log.Warn("session reaper", "err", err) },
	})
	if err != nil {
		return err
	}
	g.goRun("sessions", g.Sessions.Run, runCtx)
	return nil
}

// writeHookSettings writes the Claude Code settings file panes launch
// with: fleetd's hooks, pointing at this very binary, whose path it
// returns (a sandbox must let the agent run it).
func writeHookSettings(path string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("hooks settings: %w", err)
	}
	return exe, claudehook.SettingsConfig{Fleetd: exe}.WriteFile(path)
}

// goRun runs one component; if it fails, the whole gateway stops.
func (g *Gateway) goRun(name string, run func(context.Context) error, ctx context.Context) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := run(ctx); err != nil && ctx.Err() == nil {
			g.fail(fmt.Errorf("%s: %w", name, err))
		}
	}()
}

func (g *Gateway) fail(err error) {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	if g.err != nil {
		return
	}
	g.err = err
	g.log.Error("gateway component failed", "err", err)
	close(g.done)
	if g.cancel != nil {
		g.cancel()
	}
}

// Done is closed when a component failed; Err says why.
func (g *Gateway) Done() <-chan struct{} { return g.done }

// Err is the first component failure, or nil.
func (g *Gateway) Err() error {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err
}

// JetStream is the gateway's JetStream handle (its own identity's).
func (g *Gateway) JetStream() jetstream.JetStream { return g.js }

// HerdrMetrics are the herdr bridge's series (requests, typed turns).
func (g *Gateway) HerdrMetrics() *herdrbridge.Metrics { return g.herdrMetrics }

// HTTPAddr is where the lead shim listens.
func (g *Gateway) HTTPAddr() string { return g.httpAddr }

// ShimURL is the lead shim's base URL: https:// when it serves TLS.
func (g *Gateway) ShimURL() string {
	if g.cfg.TLSCert != "" {
		return "https://" + g.httpAddr
	}
	return "http://" + g.httpAddr
}

// Host is this gateway's host token.
func (g *Gateway) Host() string { return g.cfg.Host }

func (g *Gateway) DataDir() string {
	if g.cfg.NATS.DataDir != "" {
		return g.cfg.NATS.DataDir
	}
	return DefaultDataDir()
}

// paneToken is the NATS token a spawned pane's hooks get.
func (g *Gateway) PaneToken() string { return PaneToken(g.cfg.Creds, g.cfg.NATSToken) }

// dial opens a connection as the identity creds (or the token) to the
// gateway's server: the embedded one in-process, or the external one.
func (g *Gateway) dial(name, creds string, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := natsauth.ClientOptions(creds, g.cfg.NATSToken)
	if err != nil {
		return nil, err
	}
	opts = append(append([]nats.Option{nats.Name(name)}, opts...), extra...)
	if g.cfg.ExternalURL != "" {
		nc, err := nats.Connect(g.cfg.ExternalURL, opts...)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", g.cfg.ExternalURL, err)
		}
		return nc, nil
	}
	// A server with fleetd auth wants credentials in-process too.
	return g.srv.Connect(opts...)
}

func (g *Gateway) connect(ctx context.Context) error {
	var err error
	if g.cfg.ExternalURL != "" {
		g.nc, err = g.dial("fleetd "+g.cfg.Host, g.cfg.Creds, nats.MaxReconnects(-1), nats.ErrorHandler(g.denials.Handle))
		if err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(g.cfg.NATS.DataDir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		g.srv, err = embeddednats.New(g.cfg.NATS)
		if err != nil {
			return err
		}
		if err := g.srv.Start(ctx); err != nil {
			return err
		}
		g.nc, err = g.dial("fleetd", g.cfg.Creds, nats.ErrorHandler(g.denials.Handle))
		if err != nil {
			g.srv.Close()
			return err
		}
	}
	if g.js, err = jetstream.New(g.nc); err != nil {
		return err
	}
	extra := []nats.Option{nats.ErrorHandler(g.denials.Handle)}
	if g.cfg.ExternalURL != "" {
		extra = append(extra, nats.MaxReconnects(-1))
	}
	if g.viewsNC, err = g.dial("fleetd "+g.cfg.Host+" views", g.cfg.Creds, extra...); err != nil {
		g.shutdownNATS()
		return err
	}
	g.viewsJS, err = jetstream.New(g.viewsNC)
	return err
}

func (g *Gateway) hostUp(heartbeat bool) events.Event {
	machine, _ := os.Hostname()
	return events.Event{Subject: g.cfg.Host, Data: events.HostUp{
		Host: g.cfg.Host, Version: g.cfg.Version, NATSURL: g.NATSURL(),
		HTTPAddr: g.httpAddr, DataDir: g.cfg.NATS.DataDir, PID: os.Getpid(), Heartbeat: heartbeat,
		Machine: machine, Herdr: g.herdrSocket,
	}}
}

// heartbeat announces the host periodically so a federated roster can
// tell a silent host from a quiet one. A failing heartbeat is logged
// when it starts failing and when it works again, not every beat.
func (g *Gateway) heartbeat(ctx context.Context) {
	t := time.NewTicker(g.cfg.Heartbeat)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, err := g.Log.Append(ctx, g.hostUp(true))
			switch {
			case ctx.Err() != nil:
			case err != nil && !failing:
				g.log.Warn("heartbeat failed; retrying every beat", "err", err)
				failing = true
			case err == nil && failing:
				g.log.Info("heartbeat works again")
				failing = false
			}
		}
	}
}

// NATSURL is where `nats` can reach this gateway's server.
func (g *Gateway) NATSURL() string {
	if g.cfg.ExternalURL != "" {
		return g.cfg.ExternalURL
	}
	if g.srv != nil {
		return g.srv.ClientURL()
	}
	return ""
}

// runtime is where this host's agents run: herdr unless configured, ""
// without any.
func (g *Gateway) runtime() string {
	switch {
	case g.cfg.NoHerdr:
		return ""
	case g.cfg.Runtime == "":
		return "herdr"
	}
	return g.cfg.Runtime
}

// Banner tells a person where things are.
func (g *Gateway) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleetd %s up on host %s\n", g.cfg.Version, g.cfg.Host)
	if g.srv != nil {
		fmt.Fprintf(&b, "  data:   %s\n", g.cfg.NATS.DataDir)
	}
	if u := g.NATSURL(); u != "" {
		fmt.Fprintf(&b, "  nats:   %s\n", u)
		fmt.Fprintf(&b, "  tap:    nats --server %s sub 'fleet.>'\n", u)
		fmt.Fprintf(&b, "          nats --server %s stream view %s\n", u, events.Stream)
		switch {
		case g.cfg.Creds != "":
			fmt.Fprintf(&b, "  auth:   NATS users (this gateway: %s); tap with the admin's key: nats --nkey <dir>/admin.nk …\n", filepath.Base(g.cfg.Creds))
		case g.cfg.NATSToken != "":
			fmt.Fprintf(&b, "  auth:   NATS token (nats --token …; fleetd's commands: --token or FLEET_TOKEN)\n")
		}
	} else {
		fmt.Fprintf(&b, "  nats:   in-process only (no listener)\n")
	}
	if g.httpAddr != "" {
		fmt.Fprintf(&b, "  shim:   %s  (POST /message, GET /roster, /sessions, /events, /metrics)\n", g.ShimURL())
		fmt.Fprintf(&b, "  dashboard: %s/\n", g.ShimURL())
	}
	switch {
	case g.Bridge == nil:
		fmt.Fprintf(&b, "  herdr:  off (--no-herdr): this host types into no panes\n")
	case g.runtime() == "agentapi":
		fmt.Fprintf(&b, "  agents: under agentapi, through fleetd's agentapi host on %s (%s)\n", g.herdrSocket, g.cfg.RuntimeReason)
		fmt.Fprintf(&b, "          agentapi listens on every interface without authentication: keep this host's ports firewalled\n")
	default:
		fmt.Fprintf(&b, "  herdr:  %s (connects when herdr is there; without herdr: fleetd dev-herdr --socket PATH, then --herdr PATH)\n", g.herdrSocket)
	}
	return b.String()
}

// Close announces the host down and stops everything. Idempotent.
func (g *Gateway) Close() error {
	var err error
	g.once.Do(func() {
		if g.cancel != nil {
			g.cancel()
		}
		g.wg.Wait()
		if g.Views != nil {
			g.Views.Close()
		}
		if g.announced {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, aerr := g.Log.Append(ctx, events.Event{Subject: g.cfg.Host, Data: events.HostDown{Host: g.cfg.Host, Reason: "shutdown"}})
			cancel()
			if aerr != nil {
				// The shutdown itself is clean: the log (lost, full) just
				// cannot record it; other hosts see this one go silent.
				g.log.Warn("could not announce the host down", "err", aerr)
			}
		}
		g.shutdownNATS()
	})
	return err
}

func (g *Gateway) shutdownNATS() {
	if g.adminNC != nil {
		g.adminNC.Close()
	}
	for _, nc := range []*nats.Conn{g.viewsNC, g.nc} {
		if nc != nil {
			_ = nc.Drain()
			nc.Close()
		}
	}
	if g.srv != nil {
		g.srv.Close()
	}
}

// DefaultDataDir is where a host keeps its store and state unless told:
// $XDG_STATE_HOME/fleetd, else ~/.local/state/fleetd.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "fleetd")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "fleetd")
	}
	return filepath.Join(home, ".local", "state", "fleetd")
}
