package gateway

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/retention"
	"github.com/fleetd/fleetd/roles"
)

// Config is everything one host's fleetd process runs with.
type Config struct {
	Host string
	// Version is what the host announces (fleetd's version).
	Version string
	// NATS configures the embedded server; ignored when ExternalURL is set.
	NATS        embeddednats.Config
	ExternalURL string
	// Creds is this gateway's NATS identity (its key from 'fleetd auth',
	// or a .creds file); NATSToken the token it presents without one. A
	// pane gets its agent's own key, or NATSToken, never Creds.
	Creds     string
	NATSToken string
	// AdminCreds, when set, is a key allowed to provision the fabric
	// (create FLEET, the buckets and the router's consumers); it is used
	// for that alone, on a connection of its own. Without it, a gateway
	// whose identity may not provision waits for 'fleetd provision'.
	AdminCreds string
	Replicas   int
	HTTP       string
	// Token is the lead shim's bearer token.
	Token string
	// TLSCert and TLSKey, together, make the lead shim serve HTTPS with
	// this certificate (PEM files): the token, the dashboard's cookie
	// (Secure then) and every turn are encrypted on the network.
	TLSCert, TLSKey string
	HerdrPath       string
	NoHerdr         bool
	// Runtime names where this host's agents run ("herdr", the default,
	// or "agentapi": fleetd's agentapi host at HerdrPath) and
	// RuntimeReason why it was chosen; both are logged, in the banner
	// and in /healthz.
	Runtime, RuntimeReason string
	RolesFile              string
	// Roles, when set, is used instead of reading RolesFile (the demo and
	// tests build roles in code).
	Roles     *roles.Config
	Heartbeat time.Duration
	// SubmitTimeout bounds the wait for proof a typed prompt was
	// submitted before Enter is pressed again (default 5s).
	SubmitTimeout time.Duration
	// StartupGrace bounds a spawned or restarted agent's start (default
	// 60s, herdrbridge.BridgeConfig.StartupGrace).
	StartupGrace time.Duration
	// ExitGrace: how long the turns of an agent whose session ended wait
	// for a new one (default 30s).
	ExitGrace time.Duration
	// MaxText bounds a turn's text (default 1 MiB).
	MaxText int
	// MaxEventReaders and MaxConns bound the lead shim's event streams and
	// connections (0: its defaults).
	MaxEventReaders int
	MaxConns        int
	// HostTTL: a host silent this long has its agents marked stale.
	HostTTL time.Duration
	// IdleTTL closes a named session's pane on this host once it has been
	// idle this long (0: never); the session stays resumable.
	IdleTTL time.Duration
	// Retain is FLEET's retention (retention.ParsePolicy): "" is the
	// default, a week, plus half of the store when NATS.MaxStore is set.
	Retain string
	// RetainTurns is how long final turns stay in fleet_turns
	// (retention.ParseAge): "" is a week, "forever" keeps them.
	RetainTurns string
	// RecreateStream: create FLEET again once it has been missing this
	// long (0: never; an administrator recreates it and fleetd resumes).
	RecreateStream time.Duration
	Logger         *slog.Logger
}

// DefaultRetainTurns is how long final turns stay in fleet_turns unless
// told otherwise.
const DefaultRetainTurns = 7 * 24 * time.Hour

// retention parses Retain and RetainTurns, applying the defaults.
func (c Config) retention() (retention.Policy, time.Duration, error) {
	var errs []error
	policy := retention.DefaultPolicy
	if c.Retain != "" {
		p, err := retention.ParsePolicy(c.Retain)
		if err != nil {
			errs = append(errs, fmt.Errorf("--retain: %w", err))
		}
		policy = p
	} else if c.ExternalURL == "" && c.NATS.MaxStore > 0 {
		// A capped store: the log makes room long before it is full.
		policy.MaxBytes = c.NATS.MaxStore / 2
	}
	turns := DefaultRetainTurns
	if c.RetainTurns != "" {
		d, err := retention.ParseAge(c.RetainTurns)
		if err != nil {
			errs = append(errs, fmt.Errorf("--retain-turns: %w", err))
		}
		turns = d
		if d > 0 && d < time.Second {
			errs = append(errs, fmt.Errorf("--retain-turns %s: at least 1s, or forever", d))
		}
	}
	if c.RecreateStream < 0 {
		errs = append(errs, fmt.Errorf("--recreate-stream %s: 0 (never) or positive", c.RecreateStream))
	}
	return policy, turns, errors.Join(errs...)
}

// Defaults of a host's timing.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultHostTTL   = 15 * time.Second
)

// HostToken is the subject token of the host called name, or, when name
// is empty, of this machine (the embedded server's default name): what a
// gateway announces itself as and what a command means by "this host".
func HostToken(name string) string {
	if name == "" {
		name = embeddednats.DefaultServerName()
	}
	return events.HostToken(name)
}

// setDefaults fills what was left zero. The host token is normalised
// (HostToken) so a machine name with dots or capitals works.
func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	// The embedded server is named for the host as given (a server
	// name may hold what a subject token may not) and requires the token
	// this gateway's own clients present, unless told otherwise.
	if c.NATS.ServerName == "" {
		c.NATS.ServerName = c.Host
		if c.NATS.ServerName == "" {
			c.NATS.ServerName = embeddednats.DefaultServerName()
		}
	}
	if c.NATS.Token == "" {
		c.NATS.Token = c.NATSToken
	}
	c.Host = HostToken(c.Host)
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.HTTP == "" {
		c.HTTP = leadshim.DefaultAddr
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.HostTTL == 0 {
		c.HostTTL = DefaultHostTTL
	}
	if c.MaxText == 0 {
		c.MaxText = leadshim.DefaultMaxText
	}
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if err := events.ValidToken(c.Host); err != nil {
		errs = append(errs, fmt.Errorf("host: %w", err))
	}
	if c.ExternalURL == "" && c.NATS.DataDir == "" {
		errs = append(errs, errors.New("a data dir is required for the embedded NATS server (or an external NATS URL)"))
	}
	// A shim off loopback without a token is refused by the shim itself,
	// after the NATS listener's own check (which says more).
	if _, err := leadshim.Loopback(c.HTTP); err != nil {
		errs = append(errs, fmt.Errorf("--http: %w", err))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	} else if c.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
			errs = append(errs, fmt.Errorf("--tls-cert/--tls-key: %w", err))
		}
	}
	if c.Heartbeat < 0 || c.HostTTL < 0 || c.IdleTTL < 0 || c.SubmitTimeout < 0 || c.StartupGrace < 0 || c.ExitGrace < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if c.HostTTL > 0 && c.HostTTL < c.Heartbeat {
		errs = append(errs, fmt.Errorf("--host-ttl %s is shorter than the heartbeat %s: every host would look stale", c.HostTTL, c.Heartbeat))
	}
	if c.MaxText < 0 || c.MaxEventReaders < 0 || c.MaxConns < 0 || c.Replicas < 0 {
		errs = append(errs, errors.New("limits and replicas must not be negative"))
	}
	if c.Roles == nil && c.RolesFile != "" {
		if _, err := roles.Load(c.RolesFile); err != nil {
			errs = append(errs, err)
		}
	}
	if _, _, err := c.retention(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
