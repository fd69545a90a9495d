package natstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// Option adjusts how a test server starts.
type Option func(*settings)

type settings struct {
	cfg        embeddednats.Config
	clientOpts []nats.Option
}

// WithTCP gives the server a client listener on a free loopback port, for
// tests that run the nats CLI or a child process against it.
func WithTCP() Option {
	return func(s *settings) { s.cfg.Listen = "127.0.0.1:0" }
}

// WithSyncAlways turns fsync-per-write on, for tests about durability.
func WithSyncAlways() Option {
	return func(s *settings) { s.cfg.SyncAlways = true }
}

// WithDataDir uses dir as the store instead of a fresh temp dir, so a test
// can restart a server on the same data.
func WithDataDir(dir string) Option {
	return func(s *settings) { s.cfg.DataDir = dir }
}

// WithConfig lets a test change anything else.
func WithConfig(f func(*embeddednats.Config)) Option {
	return func(s *settings) { f(&s.cfg) }
}

// WithClientOptions are used for the helper's own connection, e.g. the
// credentials of a server that requires auth.
func WithClientOptions(opts ...nats.Option) Option {
	return func(s *settings) { s.clientOpts = append(s.clientOpts, opts...) }
}

// Server is a running test server with one in-process client connection.
type Server struct {
	*embeddednats.Server
	// NC is an in-process connection, closed at cleanup.
	NC *nats.Conn
	// JS is a JetStream context on NC.
	JS jetstream.JetStream
	// Config is what the server was started with (Restart starts it
	// again with the same data dir, name and routes).
	Config embeddednats.Config

	clientOpts []nats.Option
}

// Restart stops s, if it still runs, and starts a server again from its
// Config (a member coming back after a kill or a reboot, its data dir as
// it left it); it returns the new one, connected like s was.
func (s *Server) Restart(tb testing.TB) *Server {
	tb.Helper()
	s.Server.Close()
	srv, err := embeddednats.New(s.Config)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		tb.Fatalf("natstest: restart %s: %v", s.Config.ServerName, err)
	}
	tb.Cleanup(srv.Close)
	return connect(tb, srv, s.Config, s.clientOpts)
}

// Start runs an embedded server for the length of the test.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	st := settings{cfg: embeddednats.Config{DataDir: tb.TempDir(), ServerName: "test"}}
	for _, o := range opts {
		o(&st)
	}
	srv, err := embeddednats.New(st.cfg)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	tb.Cleanup(srv.Close)
	return connect(tb, srv, st.cfg, st.clientOpts)
}

// connect is srv with a client connection, closed when the test ends.
func connect(tb testing.TB, srv *embeddednats.Server, cfg embeddednats.Config, opts []nats.Option) *Server {
	tb.Helper()
	nc, err := srv.Connect(opts...)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	return &Server{Server: srv, NC: nc, JS: js, Config: cfg, clientOpts: opts}
}

// StartCluster runs n embedded servers as one cluster on loopback and waits
// until they agree on a JetStream meta leader. Servers are named n1…nN.
func StartCluster(tb testing.TB, n int, opts ...Option) []*Server {
	tb.Helper()
	servers, _ := StartClusterWithProcesses(tb, n, 0, opts...)
	return servers
}

// StartClusterWithProcesses runs a cluster of n in-process servers, n1…nN,
// and k members in child processes of the test binary, nN+1…nN+k (see
// Member: a test can kill those as a crash does). It waits until all of
// them agree on a JetStream meta leader. Options apply to every member;
// client options only to the in-process servers' connections.
func StartClusterWithProcesses(tb testing.TB, n, k int, opts ...Option) ([]*Server, []*Member) {
	tb.Helper()
	ports := FreePorts(tb, n+k)
	routes := make([]string, n+k)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	servers := make([]*embeddednats.Server, n)
	cfgs := make([]embeddednats.Config, n+k)
	var clientOpts []nats.Option
	for i := range n + k {
		cfg := embeddednats.Config{
			DataDir:       tb.TempDir(),
			ServerName:    fmt.Sprintf("n%d", i+1),
			ClusterName:   "fleet-test",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			Routes:        routes,
			ReadyTimeout:  60 * time.Second,
		}
		st := settings{cfg: cfg}
		for _, o := range opts {
			o(&st)
		}
		clientOpts, cfgs[i] = st.clientOpts, st.cfg
	}
	// Members must start together: each waits for a meta leader, which
	// needs a quorum of the others.
	errs := make(chan error, n+k)
	members := make([]*Member, k)
	for i := range k {
		m, ready := startMember(tb, cfgs[n+i])
		members[i] = m
		go func() { errs <- <-ready }()
	}
	for i := range n {
		srv, err := embeddednats.New(cfgs[i])
		if err != nil {
			tb.Fatalf("natstest: %v", err)
		}
		servers[i] = srv
		tb.Cleanup(srv.Close)
		go func() { errs <- srv.Start(context.Background()) }()
	}
	for range n + k {
		if err := <-errs; err != nil {
			tb.Fatalf("natstest cluster: %v", err)
		}
	}
	out := make([]*Server, n)
	for i, srv := range servers {
		out[i] = connect(tb, srv, cfgs[i], clientOpts)
	}
	if n > 0 {
		waitPlacement(tb, out[0].JS, n+k)
	}
	return out, members
}

// waitPlacement waits until the cluster can place a stream on all n
// servers: a meta leader is elected before every peer is known online,
// and on a loaded machine the first R3 stream a test creates then failed
// with "no suitable peers for placement".
func waitPlacement(tb testing.TB, js jetstream.JetStream, n int) {
	tb.Helper()
	err := checkfor.Poll(60*time.Second, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "NATSTEST_PLACEMENT", Subjects: []string{"natstest.placement"},
			Replicas: n, Storage: jetstream.MemoryStorage})
		if err != nil {
			return err
		}
		return js.DeleteStream(ctx, "NATSTEST_PLACEMENT")
	})
	if err != nil {
		tb.Fatalf("natstest cluster: no stream placed on all %d servers within 60s: %v", n, err)
	}
}

// FreePorts returns n distinct free TCP ports on loopback. A port is free
// only until someone binds it, and `go test ./...` runs packages side by
// side: each port is also reserved, across processes, with a file in
// os.TempDir()/fleetd-test-ports until the test ends, and a port another
// test reserved is passed over. (Two packages' clusters once got routes
// to each other's ports; their members never agreed on a leader.) The
// ports lie below the kernel's ephemeral range, which it hands out on its
// own — to a listener on port 0 (every embedded server's client port) and
// to every outgoing connection (each hook a test's agents run) — so none
// of those can take a port between its reservation and its bind.
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	dir := filepath.Join(os.TempDir(), "fleetd-test-ports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatalf("natstest: free port: %v", err)
	}
	lo, hi := fixedPortRange()
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			tb.Fatalf("natstest: no free unreserved port in %d tries", tries)
		}
		port := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use
		}
		// Held open while looking further, so this call cannot pick the
		// same port twice.
		lns = append(lns, ln)
		if reserve(tb, dir, port) {
			ports = append(ports, port)
		}
	}
	return ports
}

// fixedPortRange is where FreePorts picks from: the ports below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 by
// default), from 10000.
func fixedPortRange() (lo, hi int) {
	lo, hi = 10000, 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if eph, err := strconv.Atoi(f[0]); err == nil && eph > lo+1000 {
				hi = eph
			}
		}
	}
	return lo, hi
}

// reserve claims port for the rest of the test, unless another test
// holds it. A reservation older than an hour is a crashed test's.
func reserve(tb testing.TB, dir string, port int) bool {
	name := filepath.Join(dir, strconv.Itoa(port))
	if fi, err := os.Stat(name); err == nil && time.Since(fi.ModTime()) > time.Hour {
		os.Remove(name)
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	tb.Cleanup(func() { os.Remove(name) })
	return true
}

// WaitStreamLed waits until the stream name has a leader and every replica
// is current. An R3 stream just created answers appends only once its
// group elected a leader; on a loaded machine that is not at once, and an
// append before it gets "no response from stream".
func WaitStreamLed(tb testing.TB, js jetstream.JetStream, name string) {
	tb.Helper()
	checkfor.Eventually(tb, 60*time.Second, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, name)
		if err != nil {
			return err
		}
		c := s.CachedInfo().Cluster
		if c == nil || c.Leader == "" {
			return fmt.Errorf("stream %s has no leader", name)
		}
		for _, r := range c.Replicas {
			if !r.Current {
				return fmt.Errorf("stream %s: replica %s not current", name, r.Name)
			}
		}
		return nil
	})
}
