package herdrtest

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strings"
)

// call is one request being served.
type call struct {
	s      *Server
	ctx    context.Context
	conn   net.Conn
	id     string
	params json.RawMessage
}

type handler func(c *call) (any, error)

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"ping":              (*call).ping,
		"session.snapshot":  (*call).snapshot,
		"workspace.create":  (*call).workspaceCreate,
		"tab.create":        (*call).tabCreate,
		"pane.list":         (*call).paneList,
		"pane.get":          (*call).paneGet,
		"pane.focus":        (*call).paneFocus,
		"pane.split":        (*call).paneSplit,
		"pane.close":        (*call).paneClose,
		"pane.read":         (*call).paneRead,
		"pane.send_text":    (*call).sendText,
		"pane.send_keys":    (*call).sendKeys,
		"pane.send_input":   (*call).sendInput,
		"pane.report_agent": (*call).reportAgent,
		"agent.list":        (*call).agentList,
		"agent.get":         (*call).agentGet,
		"agent.focus":       (*call).agentFocus,
		"agent.prompt":      (*call).agentPrompt,
		"agent.wait":        (*call).agentWait,
		"events.wait":       (*call).eventsWait,
		"events.subscribe":  (*call).subscribe,
	}
}

// dispatch counts the request, answers an injected fault if one is due,
// else runs the handler and writes its one answer line. A handler that
// streams (events.subscribe) writes its own lines and returns (nil, nil).
func (s *Server) dispatch(c *call, method string) {
	if e := s.countCall(method); e != nil {
		s.writeError(c.conn, c.id, e)
		return
	}
	h, ok := handlers[method]
	if !ok {
		s.writeError(c.conn, c.id, errf("not_implemented", "herdrtest does not implement %s", method))
		return
	}
	res, err := h(c)
	switch e := err.(type) {
	case nil:
		if res != nil {
			s.writeLine(c.conn, successResponse{ID: c.id, Result: res}, false)
		}
	case *apiError:
		id := c.id
		if e.code == "invalid_request" {
			id = "" // herdr failed to parse the request, so it has no id
		}
		s.writeError(c.conn, id, e)
	default:
		s.writeError(c.conn, c.id, errf("internal_error", "%v", err))
	}
}

// fault is an error FailNext injected: the next n requests of a method are
// answered with it.
type fault struct {
	err *apiError
	n   int
}

// FailNext makes the next n requests of method fail with herdr's error
// shape, {"id":<request id>,"error":{"code":code,"message":message}}, and
// do nothing else: no parameter checks, no effects. It is for testing how
// a client copes with herdr refusing, e.g.
//
//	s.FailNext("agent.prompt", "agent_not_ready", "agent w1:p2 is no longer the pane foreground process", 3)
//
// A later call for the same method replaces what is left of an earlier
// one; n ≤ 0 cancels it. Refused requests still count in Calls.
func (s *Server) FailNext(method, code, message string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.faults, method)
		return
	}
	s.faults[method] = fault{err: &apiError{code: code, msg: message}, n: n}
}

// Calls returns how many requests of each method the server has served
// since it started, whether answered, refused by FailNext or failed, so
// tests and benchmarks can count what a client asked for. Requests that
// did not parse (no method) are not counted. The map is a copy.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// countCall counts a request and returns the fault due for it, if any.
func (s *Server) countCall(method string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	f, ok := s.faults[method]
	if !ok {
		return nil
	}
	if f.n--; f.n > 0 {
		s.faults[method] = f
	} else {
		delete(s.faults, method)
	}
	return f.err
}

// result builds a typed result object: {"type": typ, ...fields}.
func result(typ string, kv ...any) map[string]any {
	m := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// decode reads params as serde would: required keys must be present and
// not null, types must match, unknown keys are ignored. Failures are
// invalid_request, as the whole request then fails to parse in herdr.
func (c *call) decode(dst any, required ...string) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(c.params, &keys); err != nil {
		return errf("invalid_request", "invalid request: %v", err)
	}
	for _, k := range required {
		if v, ok := keys[k]; !ok || bytes.Equal(v, []byte("null")) {
			return errf("invalid_request", "invalid request: missing field `%s`", k)
		}
	}
	if err := json.Unmarshal(c.params, dst); err != nil {
		return errf("invalid_request", "invalid request: %v", err)
	}
	return nil
}

func oneOf(field, v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return errf("invalid_request", "invalid request: unknown variant `%s` for %s, expected one of %s", v, field, strings.Join(allowed, ", "))
}

var agentStatuses = []string{stIdle, stWorking, stBlocked, stDone, stUnknown}

func (c *call) ping() (any, error) {
	return result("pong", "version", c.s.cfg.Version, "protocol", c.s.cfg.Protocol,
		"capabilities", map[string]bool{"live_handoff": false, "detached_server_daemon": false}), nil
}

func (c *call) snapshot() (any, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := map[string]any{"version": s.cfg.Version, "protocol": s.cfg.Protocol}
	workspaces, tabs, panes, layouts, agents := []workspaceInfo{}, []tabInfo{}, []paneInfo{}, []layout{}, []agentInfo{}
	for _, ws := range s.workspaces {
		workspaces = append(workspaces, s.workspaceInfoLocked(ws))
		for _, t := range ws.tabs {
			tabs = append(tabs, s.tabInfoLocked(t))
			layouts = append(layouts, s.layoutLocked(t))
			for _, p := range t.panes {
				panes = append(panes, s.paneInfoLocked(p))
				if p.isAgent() {
					agents = append(agents, s.agentInfoLocked(p))
				}
				if s.focusedLocked(p) {
					snap["focused_pane_id"] = p.id
				}
			}
		}
	}
	if ws := s.focusedWS; ws != nil {
		snap["focused_workspace_id"] = ws.id
		snap["focused_tab_id"] = ws.activeTab.id
	}
	snap["workspaces"], snap["tabs"], snap["panes"], snap["layouts"], snap["agents"] = workspaces, tabs, panes, layouts, agents
	return result("session_snapshot", "snapshot", snap), nil
}

type createParams struct {
	WorkspaceID *string           `json:"workspace_id"`
	CWD         *string           `json:"cwd"`
	Focus       bool              `json:"focus"`
	Label       *string           `json:"label"`
	Env         map[string]string `json:"env"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// onCreate serves workspace.create and tab.create: it reads their params,
// refuses a bad env before anything is made, and answers what fn makes of
// them under s.mu.
func (c *call) onCreate(fn func(s *Server, p createParams) (any, error)) (any, error) {
	var p createParams
	if err := c.decode(&p); err != nil {
		return nil, err
	}
	if e := checkEnv(p.Env); e != nil {
		return nil, e
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s, p)
}

func (c *call) workspaceCreate() (any, error) {
	return c.onCreate(func(s *Server, p createParams) (any, error) {
		ws, t, pn, err := s.startWorkspaceLocked(str(p.Label), s.cfg.Shell, p.Env, str(p.CWD))
		if err != nil {
			return nil, errf("workspace_create_failed", "%s", err.(*apiError).msg)
		}
		if p.Focus {
			s.focusedWS = ws
		}
		s.emitCreatedLocked(ws, t, pn)
		return result("workspace_created", "workspace", s.workspaceInfoLocked(ws), "tab", s.tabInfoLocked(t),
			"root_pane", s.paneInfoLocked(pn)), nil
	})
}

func (c *call) tabCreate() (any, error) {
	return c.onCreate(func(s *Server, p createParams) (any, error) {
		ws := s.focusedWS
		if p.WorkspaceID != nil {
			if ws = s.workspaceLocked(*p.WorkspaceID); ws == nil {
				return nil, errf("workspace_not_found", "workspace %s not found", *p.WorkspaceID)
			}
		}
		if ws == nil {
			return nil, errf("no_active_workspace", "no active workspace")
		}
		t := s.newTabLocked(ws, str(p.Label))
		pn, err := s.startPaneLocked(t, s.cfg.Shell, p.Env, str(p.CWD))
		if err != nil {
			ws.tabs = remove(ws.tabs, t)
			return nil, errf("tab_create_failed", "%s", err.(*apiError).msg)
		}
		if p.Focus {
			ws.activeTab, s.focusedWS = t, ws
		}
		ti, pi, l := s.tabInfoLocked(t), s.paneInfoLocked(pn), s.layoutLocked(t)
		s.emitLocked(eventData{Type: "tab_created", Tab: &ti})
		s.emitLocked(eventData{Type: "pane_created", Pane: &pi})
		s.emitLocked(eventData{Type: "layout_updated", Layout: &l})
		return result("tab_created", "tab", ti, "root_pane", pi), nil
	})
}

type paneTarget struct {
	PaneID string `json:"pane_id"`
}

// paneLocked resolves a pane id; callers hold s.mu.
func (s *Server) paneLocked(id string) (*pane, error) {
	if p := s.panes[id]; p != nil {
		return p, nil
	}
	return nil, errf("pane_not_found", "pane %s not found", id)
}

// onPane serves a method whose params are {pane_id}: it answers what fn
// makes of that pane, or pane_not_found.
func (c *call) onPane(fn func(*pane) any) (any, error) {
	var p paneTarget
	if err := c.decode(&p, "pane_id"); err != nil {
		return nil, err
	}
	return c.s.withPane(func() (*pane, error) { return c.s.paneLocked(p.PaneID) }, fn)
}

// withPane answers what fn makes of the pane find resolves, or find's
// error; both run under s.mu.
func (s *Server) withPane(find func() (*pane, error), fn func(*pane) any) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := find()
	if err != nil {
		return nil, err
	}
	return fn(p), nil
}

func (c *call) paneList() (any, error) {
	var p struct {
		WorkspaceID *string `json:"workspace_id"`
	}
	if err := c.decode(&p); err != nil {
		return nil, err
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.WorkspaceID != nil && s.workspaceLocked(*p.WorkspaceID) == nil {
		return nil, errf("workspace_not_found", "workspace %s not found", *p.WorkspaceID)
	}
	panes := []paneInfo{}
	for _, ws := range s.workspaces {
		if p.WorkspaceID != nil && ws.id != *p.WorkspaceID {
			continue
		}
		for _, t := range ws.tabs {
			for _, pn := range t.panes {
				panes = append(panes, s.paneInfoLocked(pn))
			}
		}
	}
	return result("pane_list", "panes", panes), nil
}

func (c *call) paneGet() (any, error) {
	return c.onPane(func(p *pane) any {
		return result("pane_info", "pane", c.s.paneInfoLocked(p))
	})
}

// focusLocked focuses a pane, its tab and workspace, and marks it seen:
// done → idle with no hub event, exactly as herdr.
func (s *Server) focusLocked(p *pane) {
	changed := !s.focusedLocked(p)
	p.tab.focused, p.tab.ws.activeTab, s.focusedWS = p, p.tab, p.tab.ws
	p.seen = true
	if changed {
		s.emitLocked(eventData{Type: "pane_focused", PaneID: p.id, WorkspaceID: p.tab.ws.id})
	}
	s.notifyLocked()
}

func (c *call) paneFocus() (any, error) {
	return c.onPane(func(p *pane) any {
		c.s.focusLocked(p)
		return result("pane_info", "pane", c.s.paneInfoLocked(p))
	})
}

func (c *call) paneSplit() (any, error) {
	var p struct {
		Direction    string            `json:"direction"`
		TargetPaneID *string           `json:"target_pane_id"`
		WorkspaceID  *string           `json:"workspace_id"`
		Ratio        *float64          `json:"ratio"`
		CWD          *string           `json:"cwd"`
		Focus        bool              `json:"focus"`
		RightClick   *string           `json:"right_click"`
		Env          map[string]string `json:"env"`
	}
	if err := c.decode(&p, "direction"); err != nil {
		return nil, err
	}
	if err := oneOf("direction", p.Direction, "right", "down"); err != nil {
		return nil, err
	}
	if p.RightClick != nil {
		if err := oneOf("right_click", *p.RightClick, "herdr", "pane"); err != nil {
			return nil, err
		}
	}
	if p.Ratio != nil && (*p.Ratio <= 0 || *p.Ratio >= 1) {
		return nil, errf("invalid_ratio", "ratio must be between 0 and 1")
	}
	if e := checkEnv(p.Env); e != nil {
		return nil, e
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var t *tab
	switch {
	case p.TargetPaneID != nil:
		target, err := s.paneLocked(*p.TargetPaneID)
		if err != nil {
			return nil, err
		}
		t = target.tab
	case p.WorkspaceID != nil:
		ws := s.workspaceLocked(*p.WorkspaceID)
		if ws == nil {
			return nil, errf("workspace_not_found", "workspace %s not found", *p.WorkspaceID)
		}
		t = ws.activeTab
	case s.focusedWS != nil:
		t = s.focusedWS.activeTab
	default:
		return nil, errf("no_active_workspace", "no active workspace")
	}
	pn, err := s.startPaneLocked(t, s.cfg.Shell, p.Env, str(p.CWD))
	if err != nil {
		return nil, err
	}
	s.emitSplitLocked(pn)
	if p.Focus {
		s.focusLocked(pn)
	}
	return result("pane_info", "pane", s.paneInfoLocked(pn)), nil
}

func (c *call) paneClose() (any, error) {
	var p paneTarget
	if err := c.decode(&p, "pane_id"); err != nil {
		return nil, err
	}
	s := c.s
	s.mu.Lock()
	pn, err := s.paneLocked(p.PaneID)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	pn.closing = true
	s.removePaneLocked(pn)
	s.mu.Unlock()
	s.wg.Go(func() { s.hangUp([]*pane{pn}) })
	return result("ok"), nil
}

type readParams struct {
	PaneID    string  `json:"pane_id"`
	Source    string  `json:"source"`
	Lines     *uint32 `json:"lines"`
	Format    *string `json:"format"`
	StripANSI *bool   `json:"strip_ansi"`
}

func (r *readParams) check() error {
	if err := oneOf("source", r.Source, "visible", "recent", "recent_unwrapped", "detection"); err != nil {
		return err
	}
	if r.Format != nil {
		return oneOf("format", *r.Format, "text", "ansi")
	}
	return nil
}

// readLocked is pane.read. visible and detection read the screen the
// program shows (all of it, or its last lines rows); recent and
// recent_unwrapped read the scrollback followed by the screen, the last 80
// rows unless lines says otherwise; lines is capped at 1000. format ansi
// (or strip_ansi false) keeps each row's styles as SGR sequences, except
// for detection, which is always the text detection reads, as in herdr.
// The fake does not track soft wraps, so recent_unwrapped reads as recent.
func (s *Server) readLocked(p *pane, r readParams) readResult {
	n := 0
	if r.Source == "recent" || r.Source == "recent_unwrapped" {
		n = 80
	}
	if r.Lines != nil {
		n = int(min(*r.Lines, 1000))
	}
	format := "text"
	if r.Format != nil {
		format = *r.Format
	}
	ansi := (format == "ansi" || (r.StripANSI != nil && !*r.StripANSI)) && r.Source != "detection"
	var rows []string
	if r.Source == "visible" || r.Source == "detection" {
		rows = p.term.screen(ansi)
	} else {
		rows = p.term.history(ansi)
	}
	rows, truncated := last(rows, n)
	return readResult{PaneID: p.id, WorkspaceID: p.tab.ws.id, TabID: p.tab.id, Source: r.Source,
		Format: format, Text: strings.Join(rows, "\n"), Truncated: truncated}
}

func (c *call) paneRead() (any, error) {
	var p readParams
	if err := c.decode(&p, "pane_id", "source"); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	s := c.s
	if p.Source == "visible" || p.Source == "detection" {
		s.syncScreen(c.ctx, p.PaneID)
	}
	return s.withPane(func() (*pane, error) { return s.paneLocked(p.PaneID) }, func(pn *pane) any {
		return result("pane_read", "read", s.readLocked(pn, p))
	})
}

// syncScreen waits until the pane's screen is as new as the request
// when its terminal lags (Syncer), outside the server's lock: the pane's
// output takes it to put what the terminal read on the screen. A failure
// leaves the screen as the output brought it.
func (s *Server) syncScreen(ctx context.Context, paneID string) {
	pn, err := s.livePane(paneID)
	if err != nil {
		return
	}
	if sy, ok := pn.tty.(Syncer); ok {
		sy.Sync(ctx)
	}
}

// livePane resolves a pane id without holding the lock afterwards, for
// handlers that then write to the PTY.
func (s *Server) livePane(id string) (*pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paneLocked(id)
}

func (c *call) sendText() (any, error) {
	var p struct {
		PaneID string `json:"pane_id"`
		Text   string `json:"text"`
	}
	if err := c.decode(&p, "pane_id", "text"); err != nil {
		return nil, err
	}
	pn, err := c.s.livePane(p.PaneID)
	if err != nil {
		return nil, err
	}
	if err := c.s.write(pn, []byte(p.Text)); err != nil {
		return nil, err
	}
	return result("ok"), nil
}

// keysFor resolves the pane keys go to and encodes them, as herdr checks
// before writing anything: pane_not_found first, then invalid_key for the
// first bad name.
func (s *Server) keysFor(paneID string, keys []string) (*pane, []string, error) {
	p, err := s.livePane(paneID)
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		b, err := encodeKey(k)
		if err != nil {
			return nil, nil, errf("invalid_key", "%v", err)
		}
		out[i] = b
	}
	return p, out, nil
}

func (c *call) sendKeys() (any, error) {
	var p struct {
		PaneID string   `json:"pane_id"`
		Keys   []string `json:"keys"`
	}
	if err := c.decode(&p, "pane_id", "keys"); err != nil {
		return nil, err
	}
	pn, enc, err := c.s.keysFor(p.PaneID, p.Keys)
	if err != nil {
		return nil, err
	}
	for _, k := range enc {
		if err := c.s.write(pn, []byte(k)); err != nil {
			return nil, err
		}
	}
	return result("ok"), nil
}

// paste wraps text in bracketed-paste markers when the program turned
// bracketed paste on.
func (s *Server) paste(p *pane, text string) string {
	s.mu.Lock()
	on := p.term.bracketed
	s.mu.Unlock()
	if on && text != "" {
		return "\x1b[200~" + text + "\x1b[201~"
	}
	return text
}

func (c *call) sendInput() (any, error) {
	var p struct {
		PaneID string   `json:"pane_id"`
		Text   string   `json:"text"`
		Keys   []string `json:"keys"`
	}
	if err := c.decode(&p, "pane_id"); err != nil {
		return nil, err
	}
	pn, enc, err := c.s.keysFor(p.PaneID, p.Keys)
	if err != nil {
		return nil, err
	}
	if err := c.s.write(pn, []byte(c.s.paste(pn, p.Text)+strings.Join(enc, ""))); err != nil {
		return nil, err
	}
	return result("ok"), nil
}

// fullLifecycle are the (source, agent) pairs whose herdr-namespaced hook
// reports own the state; every other herdr: source is session-only.
var fullLifecycle = map[[2]string]bool{
	{"herdr:pi", "pi"}: true, {"herdr:omp", "omp"}: true, {"herdr:mastracode", "mastracode"}: true,
	{"herdr:opencode", "opencode"}: true, {"herdr:kilo", "kilo"}: true, {"herdr:kimi", "kimi"}: true,
}

func (c *call) reportAgent() (any, error) {
	var p struct {
		PaneID string  `json:"pane_id"`
		Source string  `json:"source"`
		Agent  string  `json:"agent"`
		State  string  `json:"state"`
		Seq    *uint64 `json:"seq"`
	}
	if err := c.decode(&p, "pane_id", "source", "agent", "state"); err != nil {
		return nil, err
	}
	// done is derived from idle+unseen; it is not a PaneAgentState.
	if err := oneOf("state", p.State, stIdle, stWorking, stBlocked, stUnknown); err != nil {
		return nil, err
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.paneLocked(p.PaneID)
	if err != nil {
		return nil, err
	}
	agent := normaliseAgent(strings.TrimSpace(p.Agent))
	if agent == "" {
		return nil, errf("invalid_agent", "agent label must not be empty")
	}
	// Every reason to ignore a report is silent: the answer is ok anyway.
	switch {
	case strings.HasPrefix(p.Source, "herdr:") && !fullLifecycle[[2]string{p.Source, agent}]:
	case p.Seq != nil && pn.seqStale(p.Source, *p.Seq):
	case pn.detected != "" && pn.detected != agent:
	default:
		if p.Seq != nil {
			pn.lastSeq[p.Source] = *p.Seq
		}
		pn.hook = &hookReport{source: p.Source, agent: agent, state: p.State}
		s.recomputeLocked(pn)
	}
	return result("ok"), nil
}

// seqStale reports whether seq is not above the last seq accepted from
// source; a source's first report is never stale.
func (p *pane) seqStale(source string, seq uint64) bool {
	last, ok := p.lastSeq[source]
	return ok && seq <= last
}
