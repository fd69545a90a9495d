package embeddednats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is one in-process nats-server with JetStream. New only validates;
// Start launches it; Close shuts it down and is safe to call twice.
type Server struct {
	cfg Config
	// maxBatch is the server's limit of messages in one atomic batch,
	// known once Start has run.
	maxBatch int

	mu sync.Mutex
	ns *server.Server
}

// New checks cfg and returns a server that is not yet running.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedded nats config: %w", err)
	}
	return &Server{cfg: cfg}, nil
}

// Config returns the configuration in effect, defaults applied.
func (s *Server) Config() Config { return s.cfg }

// MaxBatch is the most messages the server takes in one atomic batch
// (MaxAtomicBatch unless the ConfigFile set its own); 0 before Start.
func (s *Server) MaxBatch() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxBatch
}

func (s *Server) options() (*server.Options, error) {
	opts := &server.Options{}
	if s.cfg.ConfigFile != "" {
		fo, err := server.ProcessConfigFile(s.cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("server config file %s: %w", s.cfg.ConfigFile, err)
		}
		opts = fo
	}
	opts.ServerName = s.cfg.ServerName
	opts.JetStream = true
	opts.StoreDir = s.cfg.DataDir
	opts.SyncAlways = s.cfg.SyncAlways
	opts.JetStreamMaxStore = s.cfg.MaxStore
	opts.JetStreamMaxMemory = s.cfg.MaxMemory
	if opts.JetStreamLimits.MaxBatchSize == 0 {
		opts.JetStreamLimits.MaxBatchSize = MaxAtomicBatch // a config file's own wins
	}
	if opts.MaxPayload == 0 {
		opts.MaxPayload = s.cfg.MaxPayload // a config file's own max_payload wins
	}
	// fleetd owns the process: its run group handles signals, not nats-server.
	opts.NoSigs = true
	opts.NoLog = s.cfg.Logger == nil
	opts.Debug = s.cfg.Debug
	opts.Trace = s.cfg.Trace
	switch {
	case s.cfg.Listen == "" && s.cfg.Clustered():
		// nats-server starts routing only once its client listener is up,
		// so a cluster member always gets one: loopback, any free port.
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	case s.cfg.Listen == "":
		opts.DontListen = true
	default:
		host, port, _ := splitHostPort(s.cfg.Listen)
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	if s.cfg.Clustered() {
		host, port, _ := splitHostPort(s.cfg.ClusterListen)
		opts.Cluster.Name = s.cfg.ClusterName
		opts.Cluster.Host, opts.Cluster.Port = host, port
		if port == 0 {
			opts.Cluster.Port = server.RANDOM_PORT
		}
		opts.Routes = server.RoutesFromStr(strings.Join(s.cfg.Routes, ","))
		// Keep retrying routes: cluster members start in any order.
		opts.Cluster.ConnectRetries = -1
	}
	if err := s.applyAuth(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// Start launches the server and waits until it accepts connections and
// JetStream is usable; clustered, that includes an elected meta leader.
func (s *Server) Start(ctx context.Context) error {
	opts, err := s.options()
	if err != nil {
		return err
	}
	setRaftTiming()
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("new nats server: %w", err)
	}
	if s.cfg.Logger != nil {
		ns.SetLoggerV2(&slogAdapter{l: s.cfg.Logger}, s.cfg.Debug, s.cfg.Trace, false)
	}
	s.mu.Lock()
	s.ns = ns
	s.maxBatch = opts.JetStreamLimits.MaxBatchSize
	s.mu.Unlock()

	ns.Start()
	if err := s.waitReady(ctx); err != nil {
		ns.Shutdown()
		return err
	}
	return nil
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	ns := s.NATS()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ns.ReadyForConnections(100*time.Millisecond) && ns.JetStreamEnabled() && s.metaReady() {
			return nil
		}
		select {
		case <-ctx.Done():
			what := "connections"
			if ns.ReadyForConnections(10 * time.Millisecond) {
				// Which members it reached tells a wrong route or a member
				// that never came up from a cluster that could not agree.
				what = fmt.Sprintf("a JetStream meta leader (routes up to %s)", s.routedTo())
			}
			return fmt.Errorf("nats server %s not ready for %s: %w", s.cfg.ServerName, what, ctx.Err())
		case <-tick.C:
		}
	}
}

// routedTo names the cluster members the server has routes to, or says
// it has none.
func (s *Server) routedTo() string {
	rz, err := s.NATS().Routez(nil)
	if err != nil {
		return "unknown members: " + err.Error()
	}
	var names []string
	for _, r := range rz.Routes {
		if r.RemoteName != "" && !slices.Contains(names, r.RemoteName) {
			names = append(names, r.RemoteName)
		}
	}
	if len(names) == 0 {
		return "no member"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// metaReady reports whether JetStream can serve API requests: always when
// standalone, and once a meta leader is known when clustered.
func (s *Server) metaReady() bool {
	ns := s.NATS()
	if !s.cfg.Clustered() {
		return true
	}
	if !ns.JetStreamIsClustered() {
		return false
	}
	info, err := ns.Jsz(&server.JSzOptions{LeaderOnly: false})
	if err != nil || info.Meta == nil {
		return false
	}
	return info.Meta.Leader != "" && ns.JetStreamIsCurrent()
}

// NATS returns the underlying nats-server, or nil before Start.
func (s *Server) NATS() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ns
}

// ClientURL is the nats:// URL clients and the `nats` CLI use, or "" when the
// server listens in-process only.
func (s *Server) ClientURL() string {
	ns := s.NATS()
	if ns == nil || (s.cfg.Listen == "" && !s.cfg.Clustered()) {
		return ""
	}
	return ns.ClientURL()
}

// ClusterURL is the nats:// route URL other members use, or "" when not clustered.
func (s *Server) ClusterURL() string {
	ns := s.NATS()
	if ns == nil || !s.cfg.Clustered() {
		return ""
	}
	addr := ns.ClusterAddr()
	if addr == nil {
		return ""
	}
	return "nats://" + addr.String()
}

// Connect opens a client connection to the server in-process: no TCP, no
// port, and the same semantics as a network client.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	ns := s.NATS()
	if ns == nil {
		return nil, errors.New("embedded nats: not started")
	}
	opts = append([]nats.Option{nats.InProcessServer(ns), nats.Name("fleetd")}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("in-process connect: %w", err)
	}
	return nc, nil
}

// Close shuts the server down and waits for it to finish, flushing the
// store. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	ns := s.ns
	s.mu.Unlock()
	if ns == nil {
		return
	}
	ns.Shutdown()
	ns.WaitForShutdown()
}

// Run starts the server, blocks until ctx is done, then closes it. It is the
// server's actor in a process run group.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	s.Close()
	return nil
}
