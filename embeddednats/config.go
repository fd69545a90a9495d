package embeddednats

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultListen is where fleetd's embedded server accepts clients unless told
// otherwise: loopback only, on the standard NATS port, so `nats` finds it.
const DefaultListen = "127.0.0.1:4222"

// Config describes one embedded server. Start from DefaultConfig for what
// `fleetd up` runs; the zero Config is what tests want (in-process only,
// no fsync per write) once DataDir is set.
type Config struct {
	// DataDir is the JetStream store directory. Required.
	DataDir string
	// ServerName names this server in the cluster and in logs. It defaults
	// to the host name; in a cluster it must be unique.
	ServerName string
	// Listen is the client listen address (host:port). Empty means
	// in-process connections only: no TCP listener at all.
	Listen string
	// SyncAlways fsyncs every JetStream write before it is acknowledged, so
	// an acknowledged event survives a power cut (the Jepsen lesson). On in
	// DefaultConfig.
	SyncAlways bool
	// MaxStore and MaxMemory cap JetStream's file and memory use in bytes.
	// Zero means nats-server's default (unlimited, within the disk).
	MaxStore  int64
	MaxMemory int64
	// MaxPayload is the largest message the server takes. Default
	// DefaultMaxPayload: a turn's text may be 1 MiB, and its event is
	// JSON (up to twice the text).
	MaxPayload int32
	// ClusterName, ClusterListen and Routes make the server a cluster
	// member. All three are needed together; Routes may include this
	// server's own address (nats-server ignores a route to itself).
	ClusterName   string
	ClusterListen string
	Routes        []string
	// ConfigFile, when set, is a nats-server configuration file whose
	// settings (accounts, users, permissions, TLS, route authorization)
	// are applied under the fields above. `fleetd auth` writes such files.
	//
	// A client listener off loopback needs client auth (Token or the
	// file's users), and a cluster listener off loopback needs route
	// authorization (Token or the file's): Start refuses the server
	// otherwise (ErrUnauthenticated).
	ConfigFile string
	// Token, when set, is required of every client (nats-server's
	// authorization token) unless ConfigFile configures client auth of its
	// own; clustered, routes then authenticate with it too (user
	// RouteUser), unless ConfigFile configures route authorization.
	Token string
	// Logger receives nats-server's log lines. Nil discards them.
	Logger *slog.Logger
	// Debug and Trace turn on nats-server's verbose log levels.
	Debug, Trace bool
	// ReadyTimeout bounds Start's wait for readiness (and, clustered, for a
	// JetStream meta leader). Default 30s.
	ReadyTimeout time.Duration
}

// DefaultConfig returns the configuration `fleetd up` starts from: a TCP
// listener on loopback and SyncAlways on. DataDir is left to the caller.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen, SyncAlways: true}
}

// MaxAtomicBatch is the most messages the server takes in one atomic
// batch (nats-server's max_batch_size; its default is 1,000), unless a
// ConfigFile sets its own. A projection's catch-up writes thousands of
// view entries to a bucket at once, and each atomic batch is staged,
// synced and committed on its stream's goroutine: the last flush of a
// rebuild of 50,000 events (3,796 turns) was four batches on the turns
// stream one after the other, and is one. A batch's commit holds reads of
// its stream back until it is done: a read waited up to 20-23 ms during
// a batch of 4,096 entries of 500 bytes, against 6-10 ms for 1,000 (2-core
// VM, SyncAlways); a catch-up's large flushes come before its views serve.
const MaxAtomicBatch = 4096

// DefaultMaxPayload is 4 MiB: room for a 1 MiB text in an event, where
// nats-server's own default (1 MB) is not.
const DefaultMaxPayload = 4 << 20

func (c *Config) setDefaults() {
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.ServerName == "" {
		c.ServerName = DefaultServerName()
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 30 * time.Second
	}
}

// Clustered reports whether the config asks for cluster membership.
func (c Config) Clustered() bool { return c.ClusterName != "" }

// Validate reports every problem with the config at once.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir is required"))
	}
	if c.Listen != "" {
		if _, _, err := splitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("listen %q: %w", c.Listen, err))
		}
	}
	if c.MaxStore < 0 || c.MaxMemory < 0 {
		errs = append(errs, errors.New("store and memory caps must not be negative"))
	}
	if c.ServerName != "" && strings.ContainsAny(c.ServerName, " \t\n") {
		errs = append(errs, fmt.Errorf("server name %q must not contain spaces", c.ServerName))
	}
	clusterSet := c.ClusterListen != "" || len(c.Routes) > 0
	switch {
	case c.ClusterName == "" && clusterSet:
		errs = append(errs, errors.New("cluster listen and routes need a cluster name"))
	case c.ClusterName != "" && c.ClusterListen == "":
		errs = append(errs, errors.New("a cluster needs a cluster listen address"))
	case c.ClusterName != "":
		if _, _, err := splitHostPort(c.ClusterListen); err != nil {
			errs = append(errs, fmt.Errorf("cluster listen %q: %w", c.ClusterListen, err))
		}
	}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats" || u.Host == "" {
			errs = append(errs, fmt.Errorf("route %q: want nats://host:port", r))
		}
	}
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			errs = append(errs, fmt.Errorf("server config file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// DefaultServerName is the host name made safe for a NATS server name.
func DefaultServerName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "fleetd"
	}
	return strings.NewReplacer(" ", "-", ".", "-").Replace(h)
}

func splitHostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	var p int
	if _, err := fmt.Sscanf(port, "%d", &p); err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port %q", port)
	}
	return host, p, nil
}
