package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fleetd/fleetd/projections"
)

//go:embed static
var staticFS embed.FS

//go:embed templates/*.html
var templateFS embed.FS

// Server is the dashboard: an http.Handler for / and /ui/. It holds no
// goroutine of its own; each live stream is its request's.
type Server struct {
	cfg     Config
	hist    *history
	tmpl    *template.Template
	static  http.Handler
	mux     *http.ServeMux
	streams atomic.Int64
	// refused counts streams turned away over MaxStreams; dropped those
	// ended for a reader too slow to take an update.
	refused, dropped atomic.Uint64
}

// New returns a dashboard over cfg's log and fleet. It does no I/O.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, hist: newHistory(cfg)}
	t, err := template.New("").Funcs(s.funcs()).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard templates: %w", err)
	}
	s.tmpl = t
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	files := http.StripPrefix("/ui/static/", http.FileServerFS(sub))
	s.static = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.Handle("GET /ui/static/", s.static)
	mux.HandleFunc("GET /ui/view", s.fragment)
	mux.HandleFunc("GET /ui/stream", s.stream)
	mux.HandleFunc("GET /ui/api/roster", s.apiRoster)
	mux.HandleFunc("GET /ui/api/turns/{id}", s.apiTurn)
	mux.HandleFunc("GET /ui/api/cost", s.apiCost)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such dashboard path %s", r.URL.Path))
	})
	s.mux = mux
	return s, nil
}

// ServeHTTP serves the page at /, its assets, fragments and streams under
// /ui/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats is what the dashboard holds for its readers now, and what time
// travel cost.
type Stats struct {
	Streams        int    `json:"streams"`
	StreamsRefused uint64 `json:"streams_refused"`
	StreamsDropped uint64 `json:"streams_dropped"`
	// Folds counts the folds of the past run (each a replay of the log);
	// FoldHits the views of the past answered by a fold already made or
	// under way; FoldsRefused those refused for want of a slot (429).
	Folds        uint64 `json:"folds"`
	FoldHits     uint64 `json:"fold_hits"`
	FoldsRefused uint64 `json:"folds_refused"`
}

// Stats reads the dashboard's stream and time-travel accounting.
func (s *Server) Stats() Stats {
	return Stats{Streams: int(s.streams.Load()), StreamsRefused: s.refused.Load(), StreamsDropped: s.dropped.Load(),
		Folds: s.hist.folds.Load(), FoldHits: s.hist.hits.Load(), FoldsRefused: s.hist.refused.Load()}
}

// source is what a view as of p reads: the live fold, or a fold of the
// past.
func (s *Server) source(ctx context.Context, p Point) (source, error) {
	now := s.cfg.Now()
	if p.Live() {
		return source{views: s.cfg.Fleet, now: now}, nil
	}
	snap, err := s.hist.at(ctx, p, now)
	if err != nil {
		return source{}, err
	}
	return source{views: snap.views, seq: snap.seq, now: snap.at, point: p, first: snap.first}, nil
}

// viewData is what a view's template gets.
type viewData struct {
	Spec  spec
	Now   time.Time
	Live  bool
	Seq   uint64
	First uint64
	Model any
}

// model builds the view sp asks for, as of src. A missing turn or agent
// is a model too (the view says so), not an error.
func (s *Server) model(ctx context.Context, sp spec, src source) (any, error) {
	switch sp.View {
	case ViewFleet:
		return s.fleetModel(ctx, src), nil
	case ViewTurns:
		return s.turnsModel(src, sp.Filter), nil
	case ViewTurn:
		tl, ok, err := s.timeline(ctx, src, sp.ID)
		if err != nil || !ok {
			return missing{What: "turn", ID: sp.ID}, err
		}
		return tl, nil
	case ViewAgent:
		m, ok, err := s.agentModel(ctx, src, sp.ID)
		if err != nil || !ok {
			return missing{What: "agent", ID: sp.ID}, err
		}
		return m, nil
	case ViewJobs:
		b, err := s.loadBoard(ctx, src)
		if err != nil {
			return nil, err
		}
		return s.jobsModel(b, sp.ID), nil
	case ViewLog:
		m, _, err := s.logPage(ctx, src, sp.Subject)
		return m, err
	case ViewCost:
		c, err := s.cost(ctx, src, sp.By, sp.Since)
		if err != nil {
			return nil, err
		}
		return c.done(), nil
	}
	return nil, fmt.Errorf("view %q", sp.View)
}

// missing is a view of a turn or agent the fold does not know (as of the
// view's point).
type missing struct{ What, ID string }

// exec renders a view's model as its fragment.
func (s *Server) exec(sp spec, src source, model any) ([]byte, error) {
	var b bytes.Buffer
	name := "view-" + sp.View
	if _, ok := model.(missing); ok {
		name = "view-missing"
	}
	d := viewData{Spec: sp, Now: src.now, Live: src.live(), Seq: src.seq, First: src.first, Model: model}
	if err := s.tmpl.ExecuteTemplate(&b, name, d); err != nil {
		return nil, fmt.Errorf("render %s: %w", sp.View, err)
	}
	return b.Bytes(), nil
}

// render builds and renders the view sp asks for.
func (s *Server) render(ctx context.Context, sp spec) ([]byte, error) {
	src, err := s.source(ctx, sp.At)
	if err != nil {
		return nil, err
	}
	m, err := s.model(ctx, sp, src)
	if err != nil {
		return nil, err
	}
	return s.exec(sp, src, m)
}

// pageData is the page around a view: the header, the time control, the
// view's first rendering.
type pageData struct {
	viewData
	Host, Version string
	Nav           []string
	View          template.HTML
	Error         string
	// AtISO is the point as a time (RFC 3339), for the time control.
	AtISO string
	// Back and Forward step the point by a minute; Recent are points
	// before now to jump to.
	Back, Forward string
	Recent        [][2]string
	// CSRF is the token the page's actions carry (CSRFHeader, from the
	// shim in front); without one the page offers no actions. Identity
	// is who they act as; Targets and Roles fill the forms' suggestions.
	CSRF, Identity string
	Targets        [][2]string
	Roles          []string
}

// securityHeaders keep a page to its own origin: its own script and
// styles only, no framing, nothing sniffed.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	sp, err := parseSpec(r.URL.Query(), now)
	status := http.StatusOK
	d := pageData{Host: s.cfg.Host, Version: s.cfg.Version, Nav: nav}
	d.Spec, d.Now, d.Live = sp, now, true
	if err != nil {
		status, d.Error = http.StatusBadRequest, err.Error()
		d.Spec.View = ViewFleet
	} else {
		src, err := s.source(r.Context(), sp.At)
		if err == nil {
			d.viewData = viewData{Spec: sp, Now: src.now, Live: src.live(), Seq: src.seq, First: src.first}
			var m any
			if m, err = s.model(r.Context(), sp, src); err == nil {
				var b []byte
				if b, err = s.exec(sp, src, m); err == nil {
					d.View = template.HTML(b) // our own template's output
				}
			}
		}
		if err != nil {
			status, d.Error = statusOf(err), err.Error()
		}
	}
	if !d.Live {
		d.AtISO = d.Now.UTC().Format(time.RFC3339Nano)
		d.Back = sp.Link("at", d.Now.Add(-time.Minute).UTC().Format(time.RFC3339Nano))
		d.Forward = sp.Link("at", d.Now.Add(time.Minute).UTC().Format(time.RFC3339Nano))
	}
	for _, ago := range []string{"1m", "10m", "1h", "24h"} {
		d.Recent = append(d.Recent, [2]string{ago, sp.Link("at", now.Add(-must(parseAgo(ago))).UTC().Format(time.RFC3339))})
	}
	if d.Live {
		d.CSRF, d.Identity = r.Header.Get(CSRFHeader), s.cfg.Identity
		d.Targets, d.Roles = s.targets()
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, "page", d); err != nil {
		s.cfg.Logger.Warn("dashboard: render page", "err", err)
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fragment serves one view's fragment, rendered once: what the stream
// sends, for clients without it.
func (s *Server) fragment(w http.ResponseWriter, r *http.Request) {
	sp, err := parseSpec(r.URL.Query(), s.cfg.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	b, err := s.render(r.Context(), sp)
	if err != nil {
		writeSourceError(w, err)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

// statusOf is the HTTP status of an error reading the fleet.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadPoint):
		return http.StatusBadRequest
	case errors.Is(err, ErrBusy):
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// codeOf is the JSON error code of an error reading the fleet.
func codeOf(err error) string {
	switch {
	case errors.Is(err, ErrBadPoint):
		return "bad_at"
	case errors.Is(err, ErrBusy):
		return "busy"
	}
	return "unavailable"
}

// writeSourceError answers an error reading the fleet as of a point;
// a 429 says when to try again.
func writeSourceError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrBusy) {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, statusOf(err), codeOf(err), err.Error())
}

// RosterAt is the roster as of a point: GET /ui/api/roster, `fleetd
// roster --at`.
type RosterAt struct {
	// At is the time the roster is as of; Seq the last stream sequence
	// folded into it.
	At     time.Time            `json:"at"`
	Seq    uint64               `json:"seq"`
	Live   bool                 `json:"live,omitempty"`
	Agents []*projections.Agent `json:"agents"`
	Hosts  []projections.Host   `json:"hosts"`
}

// point reads ?at= or answers 400.
func (s *Server) point(w http.ResponseWriter, r *http.Request) (Point, bool) {
	p, err := ParseAt(r.URL.Query().Get("at"), s.cfg.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_at", err.Error())
		return Point{}, false
	}
	return p, true
}

// sourceAt is the fold as of ?at=, or false once it answered why there
// is none (400 for a bad point, statusOf the error otherwise).
func (s *Server) sourceAt(w http.ResponseWriter, r *http.Request) (source, Point, bool) {
	p, ok := s.point(w, r)
	if !ok {
		return source{}, p, false
	}
	src, ok := s.sourceOf(w, r, p)
	return src, p, ok
}

// sourceOf is the fold as of p, or false once it answered why there is
// none.
func (s *Server) sourceOf(w http.ResponseWriter, r *http.Request, p Point) (source, bool) {
	src, err := s.source(r.Context(), p)
	if err != nil {
		writeSourceError(w, err)
		return source{}, false
	}
	return src, true
}

func (s *Server) apiRoster(w http.ResponseWriter, r *http.Request) {
	src, _, ok := s.sourceAt(w, r)
	if !ok {
		return
	}
	out := RosterAt{At: src.now, Seq: src.seq, Live: src.live(), Agents: src.views.Roster(), Hosts: src.views.Hosts()}
	if out.Live {
		out.Seq = src.views.Applied()
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiTurn(w http.ResponseWriter, r *http.Request) {
	src, p, ok := s.sourceAt(w, r)
	if !ok {
		return
	}
	tl, found, err := s.timeline(r.Context(), src, r.PathValue("id"))
	switch {
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	case !found:
		writeError(w, http.StatusNotFound, "unknown_turn", fmt.Sprintf("no turn %s%s", r.PathValue("id"), asOf(p)))
	default:
		writeJSON(w, http.StatusOK, tl)
	}
}

func asOf(p Point) string {
	if p.Live() {
		return ""
	}
	return " as of " + p.String()
}

func (s *Server) apiCost(w http.ResponseWriter, r *http.Request) {
	p, ok := s.point(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	by, since := q.Get("by"), q.Get("since")
	if by == "" {
		by = ByAgent
	}
	if !slices.Contains(CostBy, by) {
		writeError(w, http.StatusBadRequest, "bad_by", fmt.Sprintf("by %q: want one of %v", by, CostBy))
		return
	}
	if _, err := costWindow(since, s.cfg.Now()); err != nil {
		writeError(w, http.StatusBadRequest, "bad_since", err.Error())
		return
	}
	src, ok := s.sourceOf(w, r, p)
	if !ok {
		return
	}
	c, err := s.cost(r.Context(), src, by, since)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c.done())
}

// writeJSON and writeError answer as the shim does: JSON, errors as
// {"error":{"code","message"}}.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
