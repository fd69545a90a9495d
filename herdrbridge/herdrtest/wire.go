package herdrtest

import "fmt"

// Wire types, written from herdr's schema independently of herdrbridge's so
// that the client and the fake cannot share a misreading. Optional fields
// carry omitempty because herdr omits them when empty.

type paneInfo struct {
	PaneID                string            `json:"pane_id"`
	TerminalID            string            `json:"terminal_id"`
	WorkspaceID           string            `json:"workspace_id"`
	TabID                 string            `json:"tab_id"`
	Focused               bool              `json:"focused"`
	CWD                   string            `json:"cwd,omitempty"`
	ForegroundCWD         string            `json:"foreground_cwd,omitempty"`
	Agent                 string            `json:"agent,omitempty"`
	TerminalTitle         string            `json:"terminal_title,omitempty"`
	TerminalTitleStripped string            `json:"terminal_title_stripped,omitempty"`
	AgentStatus           string            `json:"agent_status"`
	StateLabels           map[string]string `json:"state_labels,omitempty"`
	Revision              uint64            `json:"revision"`
}

type agentInfo struct {
	PaneID                string `json:"pane_id"`
	TerminalID            string `json:"terminal_id"`
	WorkspaceID           string `json:"workspace_id"`
	TabID                 string `json:"tab_id"`
	Focused               bool   `json:"focused"`
	Name                  string `json:"name,omitempty"`
	Agent                 string `json:"agent,omitempty"`
	AgentStatus           string `json:"agent_status"`
	StateChangeSeq        uint64 `json:"state_change_seq"`
	TerminalTitle         string `json:"terminal_title,omitempty"`
	TerminalTitleStripped string `json:"terminal_title_stripped,omitempty"`
	CWD                   string `json:"cwd,omitempty"`
	InteractiveReady      bool   `json:"interactive_ready,omitempty"`
	Revision              uint64 `json:"revision"`
}

type tabInfo struct {
	TabID       string `json:"tab_id"`
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	AgentStatus string `json:"agent_status"`
}

type workspaceInfo struct {
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	TabCount    int    `json:"tab_count"`
	ActiveTabID string `json:"active_tab_id"`
	AgentStatus string `json:"agent_status"`
}

type rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

type layoutPane struct {
	PaneID  string `json:"pane_id"`
	Focused bool   `json:"focused"`
	Rect    rect   `json:"rect"`
}

type layoutSplit struct {
	ID        string  `json:"id"`
	Direction string  `json:"direction"`
	Ratio     float64 `json:"ratio"`
	Rect      rect    `json:"rect"`
}

type layout struct {
	WorkspaceID   string        `json:"workspace_id"`
	TabID         string        `json:"tab_id"`
	Zoomed        bool          `json:"zoomed"`
	Area          rect          `json:"area"`
	FocusedPaneID string        `json:"focused_pane_id"`
	Panes         []layoutPane  `json:"panes"`
	Splits        []layoutSplit `json:"splits"`
}

type readResult struct {
	PaneID      string `json:"pane_id"`
	WorkspaceID string `json:"workspace_id"`
	TabID       string `json:"tab_id"`
	Source      string `json:"source"`
	Format      string `json:"format"`
	Text        string `json:"text"`
	Revision    uint64 `json:"revision"`
	Truncated   bool   `json:"truncated"`
}

// eventData is the data of a lifecycle event (format A). Type is the
// snake_case tag herdr repeats inside data.
type eventData struct {
	Type        string         `json:"type"`
	PaneID      string         `json:"pane_id,omitempty"`
	WorkspaceID string         `json:"workspace_id,omitempty"`
	TabID       string         `json:"tab_id,omitempty"`
	Agent       string         `json:"agent,omitempty"`
	AgentStatus string         `json:"agent_status,omitempty"`
	Pane        *paneInfo      `json:"pane,omitempty"`
	Tab         *tabInfo       `json:"tab,omitempty"`
	Workspace   *workspaceInfo `json:"workspace,omitempty"`
	Layout      *layout        `json:"layout,omitempty"`
}

type eventEnvelope struct {
	Event string    `json:"event"`
	Data  eventData `json:"data"`
}

// statusEvent is pane.agent_status_changed in format B: dotted, untagged.
type statusEvent struct {
	PaneID      string `json:"pane_id"`
	WorkspaceID string `json:"workspace_id"`
	AgentStatus string `json:"agent_status"`
	Agent       string `json:"agent,omitempty"`
	Title       string `json:"title,omitempty"`
}

type outputEvent struct {
	PaneID      string     `json:"pane_id"`
	MatchedLine string     `json:"matched_line"`
	Read        readResult `json:"read"`
}

type subEnvelope struct {
	Event string `json:"event"`
	Data  any    `json:"data"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type errorResponse struct {
	ID    string    `json:"id"`
	Error errorBody `json:"error"`
}

type successResponse struct {
	ID     string `json:"id"`
	Result any    `json:"result"`
}

// apiError is a herdr error answer; handlers return it to have it written
// as {"id":…,"error":{…}}.
type apiError struct {
	code, msg string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func errf(code, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}
