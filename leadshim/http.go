package leadshim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /message", s.postMessage)
	mux.HandleFunc("GET /message/{id}", s.getMessage)
	mux.HandleFunc("GET /roster", s.getRoster)
	mux.HandleFunc("GET /sessions", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.cfg.Views.Sessions()) })
	mux.HandleFunc("GET /roles", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.roleStates()) })
	mux.HandleFunc("GET /inbox/{agent}", s.getInbox)
	mux.HandleFunc("POST /inbox/{agent}", s.postInbox)
	mux.HandleFunc("POST /inbox/{agent}/ack", s.ackInbox)
	mux.HandleFunc("POST /inbox/{agent}/open", s.postOpen)
	mux.HandleFunc("POST /agents", s.postAgents)
	mux.HandleFunc("POST /agents/{id}/answer", s.postAnswer)
	mux.HandleFunc("POST /agents/{id}/stop", s.postStop)
	mux.HandleFunc("POST /agents/{id}/restart", s.postRestart)
	mux.HandleFunc("GET /agents/{id}/screen", s.getScreen)
	mux.HandleFunc("POST /message/{id}/cancel", s.postCancel)
	mux.HandleFunc("POST /jobs", s.postJobs)
	mux.HandleFunc("GET /jobs/{job}", s.getJob)
	mux.HandleFunc("POST /jobs/{job}/cancel", s.cancelJob)
	mux.HandleFunc("GET /jobs/{job}/context", s.getContext)
	mux.HandleFunc("POST /jobs/{job}/context", s.putContext)
	mux.HandleFunc("GET /events", s.streamEvents)
	mux.HandleFunc("GET /healthz", s.healthzOpen(s.healthz))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /login", s.getLogin)
	mux.HandleFunc("POST /login", s.postLogin)
	mux.HandleFunc("POST /logout", s.postLogout)
	if s.cfg.Dashboard != nil {
		mux.Handle("GET /{$}", s.dashboard(s.cfg.Dashboard))
		mux.Handle("/ui/", s.dashboard(s.cfg.Dashboard))
	}
	// Known paths with the wrong method answer 405 in JSON; the rest 404.
	for _, p := range []string{"/message", "/message/{id}", "/roster", "/sessions", "/roles", "/inbox/{agent}", "/inbox/{agent}/ack", "/inbox/{agent}/open", "/agents", "/agents/{id}/stop", "/agents/{id}/restart", "/message/{id}/cancel", "/jobs", "/jobs/{job}", "/jobs/{job}/cancel", "/jobs/{job}/context", "/events", "/healthz", "/metrics", "/login", "/logout"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, fail(http.StatusMethodNotAllowed, "method_not_allowed", "%s not allowed on %s", r.Method, r.URL.Path))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fail(http.StatusNotFound, "not_found", "no such endpoint %s", r.URL.Path))
	})
	return s.guard(s.count(s.auth(s.csrf(s.limit(mux)))))
}

// guard runs first, once a request's headers are in: its connection no
// longer counts as pending, and its body, if it has one, must arrive
// within BodyTimeout. The deadline is lifted once the body has been read
// to its end, so a blocking send or an event stream is never cut short by
// it; a body not read to its end (an error answer) keeps it, which bounds
// what net/http reads to discard the rest.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		markServed(r.Context())
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)); err == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// auth requires the bearer token, when one is set, everywhere but
// /healthz and the sign-in (/login, /logout); a dashboard login cookie
// stands for it on reads (GET, HEAD) and on the dashboard's actions
// (cookieAction), whose CSRF token csrf checks next. It decides on the headers alone: a
// refused request's body is never read, and its connection is closed
// after the 401 rather than drained, so a client cannot hold the 401 back
// by sending a body slowly. A browser asking for a dashboard page gets
// the sign-in form with the 401. A client that presented too many wrong
// tokens is answered 429 until its allowance refills (credentials).
func (s *Server) auth(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/login", "/logout":
			next.ServeHTTP(w, r)
			return
		}
		ok, wait := s.credentials(r)
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close")
		}
		switch {
		case wait > 0:
			writeError(w, &apiError{status: http.StatusTooManyRequests, retryAfter: wait,
				body: ErrorBody{Code: "too_many_failures", Message: "too many wrong tokens from this address; try again later"}})
		case s.wantsPage(r):
			s.loginPage(w, http.StatusUnauthorized, r.URL.RequestURI(), "")
			return
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="fleetd"`)
			writeError(w, fail(http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token"))
		}
		if r.ContentLength != 0 {
			// The answer is flushed before net/http reads on to discard
			// the body; an expired deadline ends that read at once.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// credentials reports whether r holds the token: the bearer token, or
// on a read or a dashboard action a sign-in cookie. A request presenting a bearer token while
// its client's allowance of failures is spent is not checked at all
// (else a guesser would learn the right token by its answer): wait says
// how long until it may try again. A wrong bearer token spends one; a
// request with none spends nothing.
func (s *Server) credentials(r *http.Request) (ok bool, wait time.Duration) {
	if s.cfg.Token == "" {
		return true, 0
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return cookieMay(r) && s.validSession(r), 0
	}
	client, now := clientKey(r), s.cfg.Now()
	if wait := s.fails.wait(client, now); wait > 0 {
		s.metrics.logins.WithLabelValues("throttled").Inc()
		return false, wait
	}
	if subtle.ConstantTimeCompare(bearer(h), []byte(s.cfg.Token)) == 1 {
		return true, 0
	}
	s.fails.failed(client, now)
	// A wrong bearer token beside a cookie: reads only, so an action is
	// never let in without the one check that would have been its CSRF.
	return readOnly(r) && s.validSession(r), 0
}

// bearer is the token of an Authorization header of the Bearer scheme;
// the scheme is case-insensitive (RFC 7235, 2.1), the token is not.
func bearer(h string) []byte {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	return []byte(strings.TrimLeft(token, " "))
}

// limit caps request bodies at MaxBody.
func (s *Server) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// count records every request by route pattern and status.
func (s *Server) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonBody(v))
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		// Whole seconds, rounded up: a client retrying then is not early.
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(e.retryAfter.Seconds())), 10))
	}
	writeJSON(w, e.status, Error{Err: e.body})
}

// roster is the roster with each row's budget standing, when the shim
// knows the budgets.
func (s *Server) roster() []*projections.Agent {
	r := s.cfg.Views.Roster()
	if s.cfg.Budgets != nil {
		r = s.cfg.Budgets.Decorate(r)
	}
	return r
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	ans, aerr := s.sendRaw(r.Context(), r.Body)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, ans.status, ans.body)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	ans, aerr := s.turn(r.Context(), TurnQuery{ID: r.PathValue("id"), Wait: r.URL.Query().Get("wait")})
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, ans.status, ans.body)
}

func (s *Server) roleStates() []RoleState {
	// Roles the file names and roles agents were registered with (a
	// role may be gone from the file while its agents live on).
	live := lo.FilterMap(s.cfg.Views.Roster(), func(a *projections.Agent, _ int) (string, bool) { return a.Role, a.Role != "" })
	out := lo.Map(lo.Uniq(append(s.cfg.Roles.Names(), live...)), func(n string, _ int) RoleState { return s.roleState(n) })
	sortBy(out, func(r RoleState) string { return r.Name })
	return out
}

// Health is the body of GET /healthz.
type Health struct {
	Status  string `json:"status"`
	NATS    string `json:"nats"`
	Applied uint64 `json:"applied"`
	LastSeq uint64 `json:"last_seq"`
	// Code says what is wrong when Status is not ok: nats_unavailable,
	// stream_lost, store_full, store_low, unavailable, behind.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Reasons say why Status is "degraded" (still 200: fleetd works,
	// part of the fleet does not): agents dead or needing a person,
	// budgets exhausted. At most maxReasons, then how many more.
	Reasons []string `json:"reasons,omitempty"`
	// Runtime is where this host's agents run (herdr or agentapi), and
	// RuntimeReason why fleetd up chose it; empty without a runtime.
	Runtime       string `json:"runtime,omitempty"`
	RuntimeReason string `json:"runtime_reason,omitempty"`
}

// maxReasons bounds Health.Reasons: a fleet of a thousand dead agents
// is said in a line more, not a thousand.
const maxReasons = 20

// degradation is what is wrong with the fleet while fleetd itself works:
// the reasons, and how many agents (or budgets) each kind counts.
type degradation struct {
	reasons []string
	// exited, ended and attention count agents; exhausted counts agents
	// and roles out of budget.
	exited, ended, attention, exhausted int
}

// degraded looks at the roster and the budgets: agents that exited
// within ExitedFor (dead: nothing is typed into them, their turns fail),
// agents whose Claude Code session ended (the pane shows a shell), agents
// that need attention, and every agent or role out of budget.
func (s *Server) degraded() degradation {
	var d degradation
	now := s.cfg.Now()
	for _, a := range s.cfg.Views.Roster() {
		switch {
		case a.Exited:
			if now.Sub(a.LastSeen) <= s.cfg.ExitedFor {
				d.exited++
				d.reasons = append(d.reasons, fmt.Sprintf("agent %s exited %s ago", a.Agent, now.Sub(a.LastSeen).Round(time.Second)))
			}
			continue
		case a.Stale:
			continue // its host is gone: the host's problem, said elsewhere
		case a.SessionEnded:
			d.ended++
			d.reasons = append(d.reasons, fmt.Sprintf("agent %s: its Claude Code session ended", a.Agent))
		}
		if a.NeedsAttention != "" {
			d.attention++
			d.reasons = append(d.reasons, fmt.Sprintf("agent %s needs attention: %s", a.Agent, a.NeedsAttention))
		}
	}
	if s.cfg.Budgets != nil {
		for _, b := range s.cfg.Budgets.Exhausted() {
			d.exhausted++
			d.reasons = append(d.reasons, "out of budget: "+b.String())
		}
	}
	if n := len(d.reasons); n > maxReasons {
		d.reasons = append(d.reasons[:maxReasons], fmt.Sprintf("and %d more", n-maxReasons))
	}
	return d
}

// healthz is 200 when NATS is connected, the log takes new work (Config
// Health) and the projection has caught up with the log as it stood at
// the request (within 2 s), else 503 with the code and the reason. A 200
// says "degraded" instead of "ok", with the reasons, while agents are
// dead or need a person or budgets are exhausted: fleetd serves, but
// part of the fleet does not.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	h := Health{Status: "ok", NATS: "connected", Runtime: s.cfg.Runtime, RuntimeReason: s.cfg.RuntimeReason}
	if s.cfg.NC != nil && !s.cfg.NC.IsConnected() {
		h.NATS = strings.ToLower(s.cfg.NC.Status().String())
		h.Status, h.Code, h.Error = "unavailable", "nats_unavailable", "not connected to NATS"
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	if e := s.healthError(); e != nil {
		h.Applied = s.cfg.Views.Applied()
		h.Status, h.Code, h.Error = "unavailable", e.body.Code, e.body.Message
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	last, err := s.cfg.Log.LastSeq(ctx, "fleet.>")
	if err == nil {
		h.LastSeq = last
		err = s.cfg.Views.WaitSeq(ctx, last)
	}
	h.Applied = s.cfg.Views.Applied()
	if err != nil {
		h.Status, h.Code, h.Error = "unavailable", "behind", "projection not caught up: "+err.Error()
		if e := logError(err); e != nil {
			h.Code, h.Error = e.body.Code, e.body.Message
		}
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	if d := s.degraded(); len(d.reasons) > 0 {
		h.Status, h.Reasons = "degraded", d.reasons
	}
	writeJSON(w, http.StatusOK, h)
}

// healthzOpen answers /healthz whole to a caller that holds the token
// (or a sign-in cookie), and only its status and code to anyone else: a
// probe learns whether fleetd serves, not which agents are dead or why.
func (s *Server) healthzOpen(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, _ := s.credentials(r); ok {
			next(w, r)
			return
		}
		rec := &healthRecorder{header: http.Header{}}
		next(rec, r)
		var h Health
		_ = json.Unmarshal(rec.body, &h)
		writeJSON(w, rec.status, struct {
			Status string `json:"status"`
			Code   string `json:"code,omitempty"`
		}{h.Status, h.Code})
	}
}

// healthRecorder keeps an answer of healthz to be cut down.
type healthRecorder struct {
	header http.Header
	status int
	body   []byte
}

func (h *healthRecorder) Header() http.Header { return h.header }
func (h *healthRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

func (h *healthRecorder) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	h.body = append(h.body, b...)
	return len(b), nil
}

// healthError is the 503 the log's health (Config.Health) calls for, or
// nil while it is healthy.
func (s *Server) healthError() *apiError {
	if s.cfg.Health == nil {
		return nil
	}
	err := s.cfg.Health()
	if err == nil {
		return nil
	}
	if e := logError(err); e != nil {
		return e
	}
	return fail(http.StatusServiceUnavailable, "unavailable", "%v", err)
}

// logError maps an error of the log that new work cannot get past to a
// 503 with a code saying which, or nil for any other error.
func logError(err error) *apiError {
	var he *events.HealthError
	switch {
	case errors.As(err, &he):
		return fail(http.StatusServiceUnavailable, he.Code, "%v", err)
	case errors.Is(err, events.ErrStreamLost):
		return fail(http.StatusServiceUnavailable, "stream_lost", "%v", err)
	case errors.Is(err, events.ErrStoreFull):
		return fail(http.StatusServiceUnavailable, "store_full", "%v", err)
	case errors.Is(err, events.ErrUnavailable):
		return fail(http.StatusServiceUnavailable, "unavailable", "%v", err)
	}
	return nil
}

// decodeStrict is json.Unmarshal refusing unknown fields.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
