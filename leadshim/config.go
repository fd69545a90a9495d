package leadshim

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
)

// Budgets is what the shim asks of package budget.
type Budgets interface {
	// Agent is how a new turn for the agent stands: nil under 80% of
	// every limit that applies to it.
	Agent(a projections.Agent) *projections.BudgetState
	// Role is how a new turn for any agent of the role stands.
	Role(role string) *projections.BudgetState
	// Decorate fills the roster rows' Budget.
	Decorate(roster []*projections.Agent) []*projections.Agent
	// Exhausted lists every agent and role out of budget now.
	Exhausted() []*projections.BudgetState
	// Admit is the queue's gate (turns.Budget): nil when a new turn for
	// the target may be queued, else a *turns.BudgetError.
	Admit(to turns.Target) error
}

// DefaultMaxText is the largest text a turn may carry: 1 MiB. Texts
// longer than Claude Code's composer takes well reach the agent as a file
// (see herdrbridge.PlanText).
const DefaultMaxText = 1 << 20

// DefaultAddr is where the shim listens unless told otherwise: loopback.
const DefaultAddr = "127.0.0.1:8765"

// Config is what the shim runs with.
type Config struct {
	// Addr is the HTTP listen address. Default DefaultAddr. Any address
	// that is not loopback requires Token.
	Addr string
	// Listener, when set, is served instead of listening on Addr (tests
	// pass one on port 0). Addr is still checked against Token.
	Listener net.Listener
	// Token is the bearer token every endpoint but /healthz requires.
	Token string
	Log   events.Log
	Views projections.Views
	Roles roles.Config
	// Budgets judges new turns against the roles file's budgets (package
	// budget's Checker, over the same Views): a turn for an agent or role
	// out of budget is refused with 429 budget_exhausted (a role with
	// budget_queue takes it into its queue instead), the roster shows
	// who is at 80% or more, and /healthz says degraded while any is
	// out. Nil: no budgets.
	Budgets Budgets
	// ExitedFor is how long an agent that exited counts as dead for
	// /healthz (degraded) and /metrics: a pane closed on purpose, or an
	// idle session reaped, is not a fault for ever. Default 1h.
	ExitedFor time.Duration
	// Dashboard, when set, is served at GET / and under /ui/ (a
	// dashboard's page, assets, fragments and streams) behind the same
	// auth as the API. With a Token, a browser signs in at /login with the
	// token: a cookie then stands for it on GET and HEAD requests only
	// (reads: the dashboard, /roster, /events); a send still needs the
	// bearer token.
	Dashboard http.Handler
	// LoginTTL is how long a dashboard sign-in lasts. Default 12h.
	LoginTTL time.Duration
	// AuthFailures wrong tokens (a sign-in, or a bearer token) a client
	// may present at once; then one more each AuthFailEvery. A client
	// over it is answered 429 whatever token it presents. Defaults 10
	// and 2s.
	AuthFailures  int
	AuthFailEvery time.Duration
	// TLS, when set, serves HTTPS (the dashboard's cookie is then
	// Secure): without it the token and the cookie cross the network in
	// clear.
	TLS *tls.Config
	// Inbox serves the agents' durable inboxes (/inbox/{agent}); nil: none.
	Inbox Inbox
	// Spawner starts agents in this host's herdr (POST /agents); nil: the
	// host drives no herdr, and spawns are 503.
	Spawner Spawner
	// Agents stops and restarts agents of this host's herdr (POST
	// /agents/{id}/stop, /restart); nil: those are 503.
	Agents Agents
	// Jobs runs plans as jobs on this host (POST /jobs); nil: none.
	Jobs Jobs
	// Expect, when set, hears of a turn about to be queued for an agent
	// by name, just before its queued event is appended, so this host's
	// bridge can look at the agent's screen meanwhile
	// (herdrbridge.Bridge.Expect). It must not block. Nil: nothing.
	Expect func(agent string)
	// NC serves the micro service and answers /healthz; nil runs HTTP only.
	NC *nats.Conn
	// Health says whether the log can take new work now: nil, or why not
	// as an error wrapping events.ErrStreamLost, events.ErrStoreFull or
	// events.ErrUnavailable (an events.Watcher's Health().Err()). While it
	// is not nil, /healthz is 503 with the reason and sends are refused
	// with it before anything is queued. Nil: always healthy.
	Health func() error
	// Runtime and RuntimeReason say in /healthz where this host's agents
	// run and why (gateway.Config's).
	Runtime, RuntimeReason string
	Logger                 *slog.Logger
	Now                    func() time.Time
	// NewID makes turn ids; default monotonic ULIDs.
	NewID func() string
	// MaxBody bounds a request body. Default 8 MiB (a MaxText text, JSON
	// escaped).
	MaxBody int64
	// MaxText bounds a turn's text, once normalised. Default
	// DefaultMaxText; longer is 413 before anything is queued.
	MaxText int
	// MaxPlanTasks bounds the tasks of a plan POST /jobs takes (more: 400
	// too_many_tasks). Default DefaultMaxPlanTasks.
	MaxPlanTasks int
	// DefaultTimeout is a send's timeout when it names none. Default 10m.
	DefaultTimeout time.Duration
	// MaxTimeout bounds a send's timeout and a long-poll. Default 24h.
	MaxTimeout time.Duration
	// Version is the micro service version (semver). Default 0.1.0.
	Version string
	// Host names this shim in event sources (fleetd/<host>/shim).
	Host string
	// Collectors are more Prometheus series for /metrics (the herdr
	// bridge's, say).
	Collectors []prometheus.Collector

	// ReadHeaderTimeout bounds reading a request's line and headers; a
	// connection that has not sent them by then is closed. Default 10s.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its
	// headers: a body still arriving after it is 408 and its connection
	// closed. Only reading the request is bounded: a blocking send may
	// take minutes to answer, an event stream lasts. Default 30s.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next
	// request. Default 2m.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers (larger: 431).
	// Default 64 KiB.
	MaxHeaderBytes int
	// MaxConns bounds open connections (blocking sends and event streams
	// included); one more is answered 503 and closed at once. It keeps
	// the process's file descriptors, which the embedded NATS server
	// shares, from running out. Default 1024.
	MaxConns int
	// MaxPendingConns bounds connections that have not yet sent a whole
	// request header (each lasts at most ReadHeaderTimeout); one more is
	// answered 503 and closed at once. Default 128, or MaxConns when that
	// is lower.
	MaxPendingConns int
	// MaxEventReaders bounds concurrent GET /events streams; one more is
	// 429. Each holds a NATS consumer and up to EventBuffer + 2 events.
	// Default 64.
	MaxEventReaders int
	// EventBuffer bounds the messages one event stream pulls from NATS
	// ahead of its reader (pulls of at most the server's max_payload
	// bytes); two more wait decoded. A reader slower than the log is not
	// buffered for: its consumer waits. Default 32.
	EventBuffer int
	// EventWriteTimeout bounds writing one event (or keep-alive) to an
	// event stream; a reader that takes longer is dropped (it may
	// reconnect with Last-Event-ID). Default 30s.
	EventWriteTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = events.NewULIDSource(c.Now)
	}
	if c.MaxBody == 0 {
		c.MaxBody = 8 << 20
	}
	if c.MaxText == 0 {
		c.MaxText = DefaultMaxText
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = 10 * time.Minute
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = 24 * time.Hour
	}
	if c.Version == "" {
		c.Version = "0.1.0"
	}
	if c.Host == "" {
		c.Host = "host"
	}
	setDefault(&c.ReadHeaderTimeout, 10*time.Second)
	setDefault(&c.BodyTimeout, 30*time.Second)
	setDefault(&c.IdleTimeout, 2*time.Minute)
	setDefault(&c.MaxHeaderBytes, 64<<10)
	setDefault(&c.MaxConns, 1024)
	if c.MaxConns > 0 {
		setDefault(&c.MaxPendingConns, min(128, c.MaxConns))
	}
	setDefault(&c.MaxEventReaders, 64)
	setDefault(&c.EventBuffer, 32)
	setDefault(&c.EventWriteTimeout, 30*time.Second)
	setDefault(&c.MaxPlanTasks, DefaultMaxPlanTasks)
	setDefault(&c.LoginTTL, 12*time.Hour)
	setDefault(&c.AuthFailures, 10)
	setDefault(&c.AuthFailEvery, 2*time.Second)
	setDefault(&c.ExitedFor, time.Hour)
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
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
	if c.MaxBody < 0 || c.MaxText < 0 || c.DefaultTimeout < 0 || c.MaxTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxBody or timeout", ErrConfig))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"ReadHeaderTimeout", int64(c.ReadHeaderTimeout)}, {"BodyTimeout", int64(c.BodyTimeout)},
		{"IdleTimeout", int64(c.IdleTimeout)}, {"EventWriteTimeout", int64(c.EventWriteTimeout)}, {"LoginTTL", int64(c.LoginTTL)}, {"AuthFailures", int64(c.AuthFailures)}, {"AuthFailEvery", int64(c.AuthFailEvery)},
		{"MaxHeaderBytes", int64(c.MaxHeaderBytes)}, {"MaxConns", int64(c.MaxConns)}, {"MaxPendingConns", int64(c.MaxPendingConns)},
		{"MaxEventReaders", int64(c.MaxEventReaders)}, {"EventBuffer", int64(c.EventBuffer)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%w: negative %s", ErrConfig, f.name))
		}
	}
	if c.MaxPendingConns > c.MaxConns && c.MaxConns > 0 {
		errs = append(errs, fmt.Errorf("%w: MaxPendingConns %d exceeds MaxConns %d", ErrConfig, c.MaxPendingConns, c.MaxConns))
	}
	loop, err := Loopback(c.Addr)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
	case !loop && c.Token == "":
		errs = append(errs, fmt.Errorf("%w: %s", ErrInsecure, c.Addr))
	}
	return errors.Join(errs...)
}

// Loopback reports whether addr (host:port) listens on loopback only. An
// empty host means every interface.
func Loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
