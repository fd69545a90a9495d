package herdrtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// maxRequestBytes is herdr's MAX_INITIAL_REQUEST_BYTES.
const maxRequestBytes = 1 << 20

// Server is a fake herdr: a Unix-socket server speaking herdr's protocol 20
// over real PTY-backed panes. It is safe for concurrent use.
type Server struct {
	cfg Config

	mu         sync.Mutex
	workspaces []*workspace
	panes      map[string]*pane // live panes by id
	all        map[string]*pane // every pane ever made, for test hooks
	focusedWS  *workspace
	nextWS     int
	nextTerm   int
	seq        uint64 // state_change_seq, server-global
	hub        hub
	changed    chan struct{} // closed and replaced on every change
	ln         net.Listener
	conns      map[net.Conn]struct{}
	genCancel  context.CancelFunc // cancels the current listener's handlers
	started    bool
	closed     bool
	calls      map[string]int   // requests served per method
	faults     map[string]fault // injected errors per method

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a Server for cfg. It does no I/O; Start listens.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{
		cfg:     cfg,
		panes:   map[string]*pane{},
		all:     map[string]*pane{},
		changed: make(chan struct{}),
		conns:   map[net.Conn]struct{}{},
		calls:   map[string]int{},
		faults:  map[string]fault{},
		done:    make(chan struct{}),
	}, nil
}

// Path is the socket path the server listens on.
func (s *Server) Path() string { return s.cfg.SocketPath }

// Start listens on the socket and starts agent detection. The server runs
// until Close, or until ctx is cancelled.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("herdrtest: server already started")
	}
	s.started = true
	s.mu.Unlock()
	if err := s.listen(); err != nil {
		return err
	}
	s.wg.Go(s.detectLoop)
	if ctx.Done() != nil {
		s.wg.Go(func() {
			select {
			case <-ctx.Done():
				go s.Close() // Close waits for this goroutine
			case <-s.done:
			}
		})
	}
	return nil
}

// Close stops listening, drops every connection, hangs up every pane
// (SIGHUP to its program and its terminal's foreground job, then SIGKILL
// to whatever is left after KillGrace) and waits for all of the server's
// goroutines. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		panes := make([]*pane, 0, len(s.panes))
		for _, p := range s.panes {
			p.closing = true
			panes = append(panes, p)
		}
		s.mu.Unlock()
		s.KillSocket()
		s.hangUp(panes)
		s.wg.Wait()
	})
	return nil
}

// KillSocket simulates herdr's server going away while its panes live on:
// it closes the listener and every open connection (subscriptions and
// waits end as if herdr died) and removes the socket file. Restart brings
// the socket back.
func (s *Server) KillSocket() {
	s.mu.Lock()
	ln := s.ln
	s.ln = nil
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	if s.genCancel != nil {
		s.genCancel()
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.Close()
	}
}

// Restart closes the socket (if it is open) and listens again on the same
// path; panes, agents and retained events are kept.
func (s *Server) Restart() error {
	s.KillSocket()
	return s.listen()
}

func (s *Server) listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("herdrtest: server closed")
	}
	path := s.cfg.SocketPath
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("herdrtest: %s: a server is already listening", path)
	}
	os.Remove(path) // a stale socket from a dead server
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("herdrtest: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("herdrtest: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.ln, s.genCancel = ln, cancel
	s.wg.Go(func() { s.accept(ctx, ln) })
	return nil
}

func (s *Server) accept(ctx context.Context, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				conn.Close()
			}()
			s.serveConn(ctx, conn)
		})
	}
}

// serveConn reads exactly one request line, as herdr does, and answers it.
func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(s.cfg.FirstLineTimeout))
	line, err := readRequestLine(br)
	if errors.Is(err, errTooLong) {
		s.writeError(conn, "", errf("invalid_request", "invalid request: request exceeds %d bytes", maxRequestBytes))
		return
	}
	if err != nil || len(bytes.TrimSpace(line)) == 0 {
		return // timeout, EOF, or the blank line herdr ignores
	}
	conn.SetReadDeadline(time.Time{})
	if v := s.cfg.Validator; v != nil {
		if err := v.ValidateRequest(line); err != nil {
			s.cfg.OnInvalid(fmt.Errorf("herdrtest received an invalid request: %w", err))
		}
	}
	req, perr := parseRequest(line)
	if perr != nil {
		s.writeError(conn, "", perr)
		return
	}
	c := &call{s: s, ctx: ctx, conn: conn, id: req.id, params: req.params}
	s.dispatch(c, req.method)
}

var errTooLong = errors.New("request too long")

func readRequestLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxRequestBytes {
			return nil, errTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

type request struct {
	id     string
	method string
	params json.RawMessage
}

// parseRequest mirrors serde's view of the envelope: id must be a string,
// method a string, params present and an object. Any failure is herdr's
// invalid_request answered with an empty id.
func parseRequest(line []byte) (request, *apiError) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return request{}, errf("invalid_request", "invalid request: %v", err)
	}
	var r request
	if err := json.Unmarshal(env.ID, &r.id); err != nil || len(env.ID) == 0 || env.ID[0] != '"' {
		return request{}, errf("invalid_request", "invalid request: id must be a string")
	}
	if err := json.Unmarshal(env.Method, &r.method); err != nil || r.method == "" {
		return request{}, errf("invalid_request", "invalid request: missing field `method`")
	}
	if len(env.Params) == 0 || env.Params[0] != '{' {
		return request{}, errf("invalid_request", "invalid request: params must be an object")
	}
	r.params = env.Params
	return r, nil
}

// writeLine sends one line with herdr's stream write timeout, checking it
// against the schema first when a Validator is configured.
func (s *Server) writeLine(conn net.Conn, v any, event bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if val := s.cfg.Validator; val != nil {
		check := val.ValidateResponse
		if event {
			check = val.ValidateEvent
		}
		if err := check(b); err != nil {
			s.cfg.OnInvalid(fmt.Errorf("herdrtest wrote an invalid line: %w", err))
		}
	}
	conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	_, err = conn.Write(append(b, '\n'))
	return err
}

func (s *Server) writeError(conn net.Conn, id string, e *apiError) {
	s.writeLine(conn, errorResponse{ID: id, Error: errorBody{Code: e.code, Message: e.msg}}, false)
}

// notifyLocked wakes every waiter; callers hold s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
