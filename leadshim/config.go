package leadshim

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
)

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
	// NC serves the micro service and answers /healthz; nil runs HTTP only.
	NC *nats.Conn
	// Health says whether the log can take new work now: nil, or why not
	// as an error wrapping events.ErrStreamLost, events.ErrStoreFull or
	// events.ErrUnavailable (an events.Watcher's Health().Err()). While it
	// is not nil, /healthz is 503 with the reason and sends are refused
	// with it before anything is queued. Nil: always healthy.
	Health func() error
	Logger *slog.Logger
	Now    func() time.Time
	// NewID makes turn ids; default monotonic ULIDs.
	NewID func() string
	// MaxBody bounds a request body. Default 8 MiB (a MaxText text, JSON
	// escaped).
	MaxBody int64
	// MaxText bounds a turn's text, once normalised. Default
	// DefaultMaxText; longer is 413 before anything is queued.
	MaxText int
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
