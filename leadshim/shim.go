package leadshim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/restart"
)

// Server is the lead shim: HTTP and the NATS micro service over one set of
// operations. Build it with New, serve it with Run.
type Server struct {
	cfg     Config
	source  string
	metrics *metrics
	handler http.Handler

	mu   sync.Mutex
	addr net.Addr
	// stopping is cancelled when Run winds down, so long-polls and event
	// streams end and the HTTP server can shut down.
	stopping context.Context
	// conns is Run's listener, nil before.
	conns *connLimiter

	// Event streams: how many run, were refused and dropped, and their
	// followers (for the events they buffer).
	readers        atomic.Int64
	readersRefused atomic.Uint64
	readersDropped atomic.Uint64
	fmu            sync.Mutex
	followers      map[*events.Follower]struct{}

	rosterCache rosterCache

	// sessions are the dashboard's sign-ins; fails throttles wrong
	// tokens per client.
	sessions sessions
	fails    *failThrottle
	// csrfSecret keys the pages' CSRF tokens without a bearer token
	// (csrfKey), made once on first use.
	csrfOnce   sync.Once
	csrfSecret []byte

	// The outcome counter counts the turns that end from created on (the
	// wall clock, as the stream's timestamps are), and after a restart of
	// its follower goes on from outcomesNext, the sequence after the last
	// event it saw (0: none yet).
	created      time.Time
	outcomesNext atomic.Uint64
}

// Stats is the shim's own accounting of what it holds for its clients:
// the bounds of Config at work.
type Stats struct {
	// Conns are the open HTTP connections (Run only); PendingConns those
	// that have not sent a whole request header yet.
	Conns        int `json:"conns"`
	PendingConns int `json:"pending_conns"`
	// ConnsRefused counts connections closed at once for being over
	// MaxConns or MaxPendingConns.
	ConnsRefused uint64 `json:"conns_refused"`
	// EventReaders are the open GET /events streams.
	EventReaders int `json:"event_readers"`
	// EventReadersRefused counts streams refused (429) over
	// MaxEventReaders; EventReadersDropped those ended because the reader
	// did not take a write within EventWriteTimeout.
	EventReadersRefused uint64 `json:"event_readers_refused"`
	EventReadersDropped uint64 `json:"event_readers_dropped"`
	// EventsBuffered are the events decoded and waiting in the streams'
	// followers, all streams together: at most one each (one more is in
	// hand; up to EventBuffer more are pulled, not yet decoded).
	EventsBuffered int `json:"events_buffered"`
}

// Stats reads the shim's accounting now.
func (s *Server) Stats() Stats {
	st := Stats{
		EventReaders:        int(s.readers.Load()),
		EventReadersRefused: s.readersRefused.Load(),
		EventReadersDropped: s.readersDropped.Load(),
	}
	s.mu.Lock()
	conns := s.conns
	s.mu.Unlock()
	if conns != nil {
		st.Conns, st.PendingConns = conns.counts()
		st.ConnsRefused = conns.refused.Load()
	}
	s.fmu.Lock()
	for f := range s.followers {
		st.EventsBuffered += f.Buffered()
	}
	s.fmu.Unlock()
	return st
}

// New returns a shim that is not yet serving. It does no I/O; it refuses
// a non-loopback address without a token (ErrInsecure).
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, source: "fleetd/" + cfg.Host + "/shim", stopping: context.Background(), followers: map[*events.Follower]struct{}{},
		created: time.Now(), fails: newFailThrottle(cfg.AuthFailures, cfg.AuthFailEvery)}
	s.metrics = newMetrics(cfg.Views, s.Stats, s.degraded)
	if err := registerAll(s.metrics.reg, cfg.Collectors); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrConfig, err)
	}
	s.handler = s.routes()
	return s, nil
}

// Handler is the HTTP API, for tests and for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.handler }

// Addr is the address the HTTP server listens on, once Run has started
// listening; nil before.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run serves HTTP and, with an NC, the micro service "fleet", until ctx
// ends; then it stops taking requests, ends long-polls and event streams,
// and waits for every handler. It returns nil after a clean stop.
func (s *Server) Run(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("leadshim: listen: %w", err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	limited := newConnLimiter(ln, s.cfg.MaxConns, s.cfg.MaxPendingConns)
	s.mu.Lock()
	s.addr = ln.Addr()
	s.stopping = runCtx
	s.conns = limited
	s.mu.Unlock()

	var wg sync.WaitGroup
	defer wg.Wait()
	var svc micro.Service
	if s.cfg.NC != nil {
		var err error
		if svc, err = s.addService(runCtx, &wg); err != nil {
			ln.Close()
			return err
		}
		defer func() { _ = svc.Stop() }()
	}
	wg.Go(func() {
		restart.Loop(runCtx, s.countOutcomes, func(err error, _ time.Duration) {
			s.cfg.Logger.Warn("leadshim: outcome follower stopped; restarting with backoff", "err", err)
		})
	})

	// No ReadTimeout or WriteTimeout: a blocking send answers after
	// minutes and an event stream lasts. Reading a request is bounded by
	// ReadHeaderTimeout and, per request, BodyTimeout (guard); writing an
	// event by EventWriteTimeout (streamEvents).
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		// Request contexts end when Run winds down, so blocking sends,
		// long-polls and event streams let Shutdown finish.
		BaseContext: func(net.Listener) context.Context { return runCtx },
		ConnContext: withConn,
		ErrorLog:    slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	s.warnExposure()
	var served net.Listener = limited
	if s.cfg.TLS != nil {
		// TLS inside the limiter: a connection is counted (and refused
		// over the caps) before its handshake, which ReadHeaderTimeout
		// bounds.
		served = tls.NewListener(limited, s.cfg.TLS)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(served) }()
	select {
	case err := <-errc:
		cancel()
		return fmt.Errorf("leadshim: serve: %w", err)
	case <-ctx.Done():
	}
	cancel()
	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	err := srv.Shutdown(shut)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("leadshim: shutdown: %w", err)
	}
	return nil
}

// MinTokenLen is the shortest bearer token the shim does not warn about
// off loopback: 16 characters (random hex of 64 bits); shorter ones can
// be guessed by anyone who can reach the address, however slowly.
const MinTokenLen = 16

// warnExposure says, as the shim starts off loopback, what a reader of
// the network could do: guess a short token, or read the token and the
// sign-in cookie when there is no TLS. It warns rather than refuses: a
// lab network may be trusted on purpose, and the operator decides.
func (s *Server) warnExposure() {
	if loop, err := Loopback(s.cfg.Addr); err != nil || loop {
		return
	}
	if n := len(s.cfg.Token); n < MinTokenLen {
		s.cfg.Logger.Warn(fmt.Sprintf("leadshim: the token is %d characters; anyone who can reach %s may guess it: use at least %d random ones (openssl rand -hex 16)",
			n, s.cfg.Addr, MinTokenLen), "addr", s.cfg.Addr)
	}
	if s.cfg.TLS == nil {
		s.cfg.Logger.Warn("leadshim: no TLS on "+s.cfg.Addr+": the bearer token, the sign-in cookie and every turn cross the network in clear (fleetd up --tls-cert/--tls-key, or a TLS proxy in front)",
			"addr", s.cfg.Addr)
	}
}
