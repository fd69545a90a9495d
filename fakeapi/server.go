package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server is a fake model API speaking the Anthropic, OpenAI Responses, OpenAI
// Chat Completions and Gemini protocols. Make one with New, then Start it
// (or Serve a listener); Close stops it. It is safe for concurrent use.
type Server struct {
	cfg    Config
	cfgErr error
	hs     *http.Server
	done   chan struct{}

	mu      sync.Mutex
	url     string
	serving bool
	closed  bool
	reqs    []Request
	changed chan struct{} // closed and replaced on every new request
	wg      sync.WaitGroup
	stop    func() bool // stops Start's ctx watcher
}

// Request is one recorded HTTP request, as the fake received and answered it.
type Request struct {
	// Time is when the request arrived.
	Time time.Time
	// Method and Path are the HTTP method and URL path; RawQuery the query.
	Method, Path, RawQuery string
	// Header is a copy of the request headers.
	Header http.Header
	// Protocol is the wire format of a model call or token count; empty
	// for model lists and unknown endpoints.
	Protocol Protocol
	// Model, Prompt, Stream, MaxTokens, System and ToolResults are parsed
	// from a model call's body, in any protocol (see Call).
	Model     string
	Prompt    string
	Stream    bool
	MaxTokens int
	System    string
	// ToolResults are the tool results after the prompt.
	ToolResults []ToolResult
	// Attached are the files attached to the prompt (see Call.Attached).
	Attached []Attachment
	// Rule names the rule that answered; empty for other endpoints.
	Rule string
	// Status is the HTTP status the fake answered.
	Status int
	// Body is the raw request body.
	Body []byte
}

// New returns a server for cfg; it does no I/O. An invalid cfg makes Start
// and Serve fail with the validation error.
func New(cfg Config) *Server {
	cfg.setDefaults()
	s := &Server{
		cfg:     cfg,
		cfgErr:  cfg.Validate(),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	s.hs = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Start listens on Config.Addr and serves in the background until ctx is
// done or Close is called. It returns once the listener is bound, so URL is
// valid afterwards.
func (s *Server) Start(ctx context.Context) error {
	if s.cfgErr != nil {
		return fmt.Errorf("fakeapi config: %w", s.cfgErr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("fakeapi listen %s: %w", s.cfg.Addr, err)
	}
	if err := s.bind(ln, true); err != nil {
		_ = ln.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = s.hs.Serve(ln)
	}()
	return nil
}

// Serve serves on ln until Close is called, then returns nil. It is the
// blocking form of Start, for a run group.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfgErr != nil {
		return fmt.Errorf("fakeapi config: %w", s.cfgErr)
	}
	if err := s.bind(ln, false); err != nil {
		return err
	}
	if err := s.hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fakeapi serve: %w", err)
	}
	return nil
}

// bind marks the server as serving on ln; background registers the serving
// goroutine Start is about to launch, so Close waits for it.
func (s *Server) bind(ln net.Listener, background bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.serving:
		return ErrStarted
	}
	s.serving = true
	if background {
		s.wg.Add(1)
	}
	s.url = "http://" + ln.Addr().String()
	return nil
}

// URL is the base URL to use as ANTHROPIC_BASE_URL, e.g.
// "http://127.0.0.1:41234"; empty until the server listens.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops the server, aborts delayed answers and waits for the serving
// goroutine started by Start. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	err := s.hs.Close()
	s.wg.Wait()
	return err
}

// Requests returns a copy of every request recorded so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Wait blocks until at least n requests were recorded and returns them all,
// or returns ctx's error.
func (s *Server) Wait(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		reqs, changed := append([]Request(nil), s.reqs...), s.changed
		s.mu.Unlock()
		if len(reqs) >= n {
			return reqs, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return reqs, fmt.Errorf("wait for %d requests (have %d): %w", n, len(reqs), ctx.Err())
		}
	}
}

// WaitFor blocks until a request for which match returns true was recorded,
// and returns the first such request, or returns ctx's error.
func (s *Server) WaitFor(ctx context.Context, match func(Request) bool) (Request, error) {
	seen := 0
	for {
		s.mu.Lock()
		reqs, changed := s.reqs[seen:], s.changed
		reqs = append([]Request(nil), reqs...)
		s.mu.Unlock()
		for _, r := range reqs {
			if match(r) {
				return r, nil
			}
		}
		seen += len(reqs)
		select {
		case <-changed:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("wait for request: %w", ctx.Err())
		}
	}
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

// Handler returns the fake's HTTP handler, to mount it elsewhere (e.g. in
// httptest.NewServer). Requests are recorded either way.
//
// OpenAI and Gemini paths are matched by their tail, so a client whose base
// URL lacks or adds a version segment still reaches the fake.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if r.Method == http.MethodPost {
			switch {
			case path == "/v1/messages":
				s.serveTurn(w, r, anthropicWire{s})
				return
			case path == "/v1/messages/count_tokens":
				s.serveCount(w, r, anthropicWire{s}, func(n int) any { return map[string]int{"input_tokens": n} })
				return
			case strings.HasSuffix(path, "/responses"):
				s.serveTurn(w, r, responsesWire{s})
				return
			case strings.HasSuffix(path, "/chat/completions"):
				s.serveTurn(w, r, chatWire{s})
				return
			}
			if model, method, ok := geminiPath(path); ok {
				g := geminiWire{s: s, model: model, stream: method == "streamGenerateContent", sse: r.URL.Query().Get("alt") == "sse"}
				switch method {
				case "generateContent", "streamGenerateContent":
					s.serveTurn(w, r, g)
					return
				case "countTokens":
					s.serveCount(w, r, g, func(n int) any { return map[string]int{"totalTokens": n} })
					return
				}
			}
		}
		switch {
		case r.Method == http.MethodGet && isGeminiModels(path):
			s.handleGeminiModels(w, r)
		case r.Method == http.MethodGet && (path == "/v1/models" || path == "/models"):
			s.handleModels(w, r)
		default:
			s.handleNotFound(w, r)
		}
	})
}

func (s *Server) newRequest(r *http.Request, body []byte) Request {
	return Request{
		Time:     s.cfg.Now(),
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     body,
	}
}

// answer runs the rules; a call no rule matches gets an echo.
func (s *Server) answer(c Call) (string, Reply) {
	for _, rule := range s.cfg.Rules {
		if rule.Match(c) {
			return rule.Name, rule.Reply(c)
		}
	}
	return "", Echo(c)
}

// sleep waits d; false when the request or the server ended first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	rec := s.newRequest(r, nil)
	rec.Status = http.StatusOK
	s.record(rec)
	// One list in both shapes: Anthropic's type/display_name/created_at
	// and OpenAI's object/created/owned_by, since both ask GET /v1/models.
	type model struct {
		Type        string `json:"type"`
		Object      string `json:"object"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
	}
	models := s.cfg.Models
	data := make([]model, 0, len(models))
	for _, id := range models {
		data = append(data, model{Type: "model", Object: "model", ID: id, DisplayName: id,
			CreatedAt: "2025-01-01T00:00:00Z", Created: 1735689600, OwnedBy: "fakeapi"})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object":   "list",
		"data":     data,
		"has_more": false,
		"first_id": models[0],
		"last_id":  models[len(models)-1],
	})
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := s.newRequest(r, body)
	rec.Status = http.StatusNotFound
	s.record(rec)
	s.writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: not found", r.Method, r.URL.Path))
}
