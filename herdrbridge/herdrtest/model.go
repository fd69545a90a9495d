package herdrtest

import (
	"fmt"
	"strconv"
)

type workspace struct {
	id        string
	number    int
	label     string
	tabs      []*tab
	activeTab *tab
	nextTab   int
	nextPane  int
}

type tab struct {
	id      string
	ws      *workspace
	number  int
	label   string
	panes   []*pane
	focused *pane
}

// The internal agent states; done is not among them, it is idle unseen.
const (
	stIdle    = "idle"
	stWorking = "working"
	stBlocked = "blocked"
	stUnknown = "unknown"
	stDone    = "done"
)

// idAlphabet is herdr's base-32 alphabet for workspace, tab and pane
// numbers: 1…9, then letters without I, L, O, U, then 0.
const idAlphabet = "123456789ABCDEFGHJKMNPQRSTVWXYZ0"

func idNum(n int) string {
	var out []byte
	for n > 0 {
		n--
		out = append([]byte{idAlphabet[n%32]}, out...)
		n /= 32
	}
	return string(out)
}

func (s *Server) newWorkspaceLocked(label string) (*workspace, *tab) {
	s.nextWS++
	ws := &workspace{id: "w" + idNum(s.nextWS), number: len(s.workspaces) + 1, label: label}
	if ws.label == "" {
		ws.label = strconv.Itoa(ws.number)
	}
	s.workspaces = append(s.workspaces, ws)
	if s.focusedWS == nil {
		s.focusedWS = ws
	}
	return ws, s.newTabLocked(ws, "")
}

func (s *Server) newTabLocked(ws *workspace, label string) *tab {
	ws.nextTab++
	t := &tab{id: ws.id + ":t" + idNum(ws.nextTab), ws: ws, number: len(ws.tabs) + 1, label: label}
	if t.label == "" {
		t.label = strconv.Itoa(t.number)
	}
	ws.tabs = append(ws.tabs, t)
	if ws.activeTab == nil {
		ws.activeTab = t
	}
	return t
}

func (s *Server) workspaceLocked(id string) *workspace {
	for _, ws := range s.workspaces {
		if ws.id == id {
			return ws
		}
	}
	return nil
}

// removePaneLocked takes a pane out of the layout and emits what herdr
// emits when a pane goes: pane_closed, then layout_updated, or tab_closed
// and workspace_closed when the pane was the last one.
func (s *Server) removePaneLocked(p *pane) {
	if p.gone {
		return
	}
	p.gone = true
	delete(s.panes, p.id)
	t, ws := p.tab, p.tab.ws
	t.panes = remove(t.panes, p)
	if t.focused == p && len(t.panes) > 0 {
		t.focused = t.panes[0]
	}
	s.emitLocked(eventData{Type: "pane_closed", PaneID: p.id, WorkspaceID: ws.id})
	if len(t.panes) > 0 {
		l := s.layoutLocked(t)
		s.emitLocked(eventData{Type: "layout_updated", Layout: &l})
		return
	}
	ws.tabs = remove(ws.tabs, t)
	s.emitLocked(eventData{Type: "tab_closed", TabID: t.id, WorkspaceID: ws.id})
	if len(ws.tabs) > 0 {
		if ws.activeTab == t {
			ws.activeTab = ws.tabs[0]
		}
		return
	}
	s.workspaces = remove(s.workspaces, ws)
	if s.focusedWS == ws {
		s.focusedWS = nil
		if len(s.workspaces) > 0 {
			s.focusedWS = s.workspaces[0]
		}
	}
	s.emitLocked(eventData{Type: "workspace_closed", WorkspaceID: ws.id})
}

func remove[T comparable](xs []T, x T) []T {
	out := xs[:0]
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func (s *Server) focusedLocked(p *pane) bool {
	return p.tab.focused == p && p.tab.ws.activeTab == p.tab && s.focusedWS == p.tab.ws
}

// status is the public AgentStatus: done is idle not yet seen.
func (p *pane) status() string {
	if p.state == stIdle && !p.seen {
		return stDone
	}
	return p.state
}

func (s *Server) paneInfoLocked(p *pane) paneInfo {
	return paneInfo{
		PaneID:                p.id,
		TerminalID:            p.terminalID,
		WorkspaceID:           p.tab.ws.id,
		TabID:                 p.tab.id,
		Focused:               s.focusedLocked(p),
		CWD:                   p.cwd,
		Agent:                 p.agent(),
		TerminalTitle:         p.term.title,
		TerminalTitleStripped: stripTitle(p.term.title),
		AgentStatus:           p.status(),
		Revision:              p.term.revision,
	}
}

func (s *Server) agentInfoLocked(p *pane) agentInfo {
	return agentInfo{
		PaneID:                p.id,
		TerminalID:            p.terminalID,
		WorkspaceID:           p.tab.ws.id,
		TabID:                 p.tab.id,
		Focused:               s.focusedLocked(p),
		Name:                  p.name,
		Agent:                 p.agent(),
		AgentStatus:           p.status(),
		StateChangeSeq:        p.stateSeq,
		TerminalTitle:         p.term.title,
		TerminalTitleStripped: stripTitle(p.term.title),
		CWD:                   p.cwd,
		InteractiveReady:      p.detected != "" && p.state == stIdle,
		Revision:              p.term.revision,
	}
}

// statusRank orders statuses for tab and workspace roll-ups: the one that
// most needs a person wins.
var statusRank = map[string]int{stUnknown: 0, stIdle: 1, stDone: 2, stWorking: 3, stBlocked: 4}

func rollup(panes []*pane) string {
	out := stUnknown
	for _, p := range panes {
		if st := p.status(); p.isAgent() && statusRank[st] > statusRank[out] {
			out = st
		}
	}
	return out
}

func (s *Server) tabInfoLocked(t *tab) tabInfo {
	return tabInfo{
		TabID: t.id, WorkspaceID: t.ws.id, Number: t.number, Label: t.label,
		Focused:   t.ws.activeTab == t && s.focusedWS == t.ws,
		PaneCount: len(t.panes), AgentStatus: rollup(t.panes),
	}
}

func (s *Server) workspaceInfoLocked(ws *workspace) workspaceInfo {
	var panes []*pane
	for _, t := range ws.tabs {
		panes = append(panes, t.panes...)
	}
	active := ""
	if ws.activeTab != nil {
		active = ws.activeTab.id
	}
	return workspaceInfo{
		WorkspaceID: ws.id, Number: ws.number, Label: ws.label, Focused: s.focusedWS == ws,
		PaneCount: len(panes), TabCount: len(ws.tabs), ActiveTabID: active, AgentStatus: rollup(panes),
	}
}

// layoutLocked lays a tab's panes side by side; the fake has no real
// geometry, only a consistent one.
func (s *Server) layoutLocked(t *tab) layout {
	area := rect{Width: s.cfg.Cols, Height: s.cfg.Rows}
	l := layout{WorkspaceID: t.ws.id, TabID: t.id, Area: area, Panes: []layoutPane{}, Splits: []layoutSplit{}}
	if t.focused != nil {
		l.FocusedPaneID = t.focused.id
	}
	n := len(t.panes)
	for i, p := range t.panes {
		w := area.Width / max(n, 1)
		l.Panes = append(l.Panes, layoutPane{PaneID: p.id, Focused: t.focused == p, Rect: rect{X: i * w, Width: w, Height: area.Height}})
		if i > 0 {
			l.Splits = append(l.Splits, layoutSplit{ID: fmt.Sprintf("%s:s%d", t.id, i), Direction: "right", Ratio: 1 / float64(n-i+1), Rect: area})
		}
	}
	return l
}
