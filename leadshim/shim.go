package leadshim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/micro"
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
}

// New returns a shim that is not yet serving. It does no I/O; it refuses
// a non-loopback address without a token (ErrInsecure).
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, source: "fleetd/" + cfg.Host + "/shim", stopping: context.Background()}
	s.metrics = newMetrics(cfg.Views)
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
	s.mu.Lock()
	s.addr = ln.Addr()
	s.stopping = runCtx
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
		backoff, failing := time.Second, false
		for runCtx.Err() == nil {
			began := time.Now()
			err := s.countOutcomes(runCtx)
			if err == nil {
				continue
			}
			if time.Since(began) > time.Minute {
				backoff, failing = time.Second, false
			}
			// A lost stream fails every restart the same way: say it once.
			if !failing {
				s.cfg.Logger.Warn("leadshim: outcome follower stopped; restarting with backoff", "err", err)
				failing = true
			}
			select {
			case <-runCtx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
		}
	})

	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Request contexts end when Run winds down, so blocking sends,
		// long-polls and event streams let Shutdown finish.
		BaseContext: func(net.Listener) context.Context { return runCtx },
		ErrorLog:    nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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
