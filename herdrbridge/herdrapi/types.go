package herdrapi

// Protocol is the herdr socket protocol version this package speaks
// (herdr 0.8.x). Check refuses a server that reports another one.
const Protocol = 20

// AgentStatus is herdr's public agent status, as read from panes, agents and
// events. StatusDone is StatusIdle not yet seen by a person; fleetd treats
// the two alike (see Ready).
type AgentStatus string

// The agent statuses herdr reports.
const (
	StatusIdle    AgentStatus = "idle"
	StatusWorking AgentStatus = "working"
	StatusBlocked AgentStatus = "blocked"
	StatusDone    AgentStatus = "done"
	StatusUnknown AgentStatus = "unknown"
)

// Ready reports whether the agent has finished and can take a prompt: idle
// and done differ only in whether the pane was looked at.
func (s AgentStatus) Ready() bool { return s == StatusIdle || s == StatusDone }

// ReadSource selects which buffer pane.read returns.
type ReadSource string

// The sources pane.read accepts.
const (
	SourceVisible         ReadSource = "visible"
	SourceRecent          ReadSource = "recent"
	SourceRecentUnwrapped ReadSource = "recent_unwrapped"
	SourceDetection       ReadSource = "detection"
)

// ReadFormat selects plain text or text with ANSI styling.
type ReadFormat string

// The formats pane.read accepts.
const (
	FormatText ReadFormat = "text"
	FormatANSI ReadFormat = "ansi"
)

// SplitDirection is where pane.split places the new pane.
type SplitDirection string

// The directions pane.split accepts.
const (
	SplitRight SplitDirection = "right"
	SplitDown  SplitDirection = "down"
)

// Pong is the answer to ping.
type Pong struct {
	Version      string        `json:"version"`
	Protocol     int           `json:"protocol"`
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}

// Capabilities are the optional server features ping advertises; herdr may
// send null, hence the pointer in Pong.
type Capabilities struct {
	LiveHandoff          bool `json:"live_handoff"`
	DetachedServerDaemon bool `json:"detached_server_daemon,omitempty"`
}

// AgentSession is the agent's own session reference as herdr learned it
// (for Claude Code, the session id from its SessionStart hook).
type AgentSession struct {
	Source string `json:"source"`
	Agent  string `json:"agent"`
	Kind   string `json:"kind"` // "id" or "path"
	Value  string `json:"value"`
}

// PaneScroll is a pane's scrollback position.
type PaneScroll struct {
	OffsetFromBottom    uint64 `json:"offset_from_bottom"`
	MaxOffsetFromBottom uint64 `json:"max_offset_from_bottom"`
	ViewportRows        uint64 `json:"viewport_rows"`
}

// PaneInfo describes one pane. Optional fields are empty when herdr omitted
// them; Agent is empty for a plain shell.
type PaneInfo struct {
	PaneID                string            `json:"pane_id"`
	TerminalID            string            `json:"terminal_id"`
	WorkspaceID           string            `json:"workspace_id"`
	TabID                 string            `json:"tab_id"`
	Focused               bool              `json:"focused"`
	CWD                   string            `json:"cwd,omitempty"`
	ForegroundCWD         string            `json:"foreground_cwd,omitempty"`
	Label                 string            `json:"label,omitempty"`
	Agent                 string            `json:"agent,omitempty"`
	Title                 string            `json:"title,omitempty"`
	TerminalTitle         string            `json:"terminal_title,omitempty"`
	TerminalTitleStripped string            `json:"terminal_title_stripped,omitempty"`
	DisplayAgent          string            `json:"display_agent,omitempty"`
	AgentStatus           AgentStatus       `json:"agent_status"`
	StateLabels           map[string]string `json:"state_labels,omitempty"`
	Tokens                map[string]string `json:"tokens,omitempty"`
	AgentSession          *AgentSession     `json:"agent_session,omitempty"`
	Scroll                *PaneScroll       `json:"scroll,omitempty"`
	Revision              uint64            `json:"revision"`
}

// AgentInfo describes a pane whose terminal herdr considers an agent.
// StateChangeSeq is server-global and grows on every real state change (not
// on done↔idle), so comparing it before and after a prompt proves that a new
// transition happened.
type AgentInfo struct {
	PaneID                 string            `json:"pane_id"`
	TerminalID             string            `json:"terminal_id"`
	WorkspaceID            string            `json:"workspace_id"`
	TabID                  string            `json:"tab_id"`
	Focused                bool              `json:"focused"`
	Name                   string            `json:"name,omitempty"`
	Agent                  string            `json:"agent,omitempty"`
	AgentStatus            AgentStatus       `json:"agent_status"`
	StateChangeSeq         uint64            `json:"state_change_seq,omitempty"`
	Title                  string            `json:"title,omitempty"`
	TerminalTitle          string            `json:"terminal_title,omitempty"`
	TerminalTitleStripped  string            `json:"terminal_title_stripped,omitempty"`
	DisplayAgent           string            `json:"display_agent,omitempty"`
	StateLabels            map[string]string `json:"state_labels,omitempty"`
	Tokens                 map[string]string `json:"tokens,omitempty"`
	AgentSession           *AgentSession     `json:"agent_session,omitempty"`
	CWD                    string            `json:"cwd,omitempty"`
	ForegroundCWD          string            `json:"foreground_cwd,omitempty"`
	ScreenDetectionSkipped bool              `json:"screen_detection_skipped,omitempty"`
	LaunchPending          bool              `json:"launch_pending,omitempty"`
	InteractiveReady       bool              `json:"interactive_ready,omitempty"`
	Revision               uint64            `json:"revision"`
}

// TabInfo describes one tab.
type TabInfo struct {
	TabID       string      `json:"tab_id"`
	WorkspaceID string      `json:"workspace_id"`
	Number      int         `json:"number"`
	Label       string      `json:"label"`
	Focused     bool        `json:"focused"`
	PaneCount   int         `json:"pane_count"`
	AgentStatus AgentStatus `json:"agent_status"`
}

// WorkspaceInfo describes one workspace.
type WorkspaceInfo struct {
	WorkspaceID string            `json:"workspace_id"`
	Number      int               `json:"number"`
	Label       string            `json:"label"`
	Focused     bool              `json:"focused"`
	PaneCount   int               `json:"pane_count"`
	TabCount    int               `json:"tab_count"`
	ActiveTabID string            `json:"active_tab_id"`
	AgentStatus AgentStatus       `json:"agent_status"`
	Tokens      map[string]string `json:"tokens,omitempty"`
}

// Rect is a cell rectangle in a layout.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// LayoutPane is one pane's place in a tab's layout.
type LayoutPane struct {
	PaneID  string `json:"pane_id"`
	Focused bool   `json:"focused"`
	Rect    Rect   `json:"rect"`
}

// LayoutSplit is one split in a tab's layout.
type LayoutSplit struct {
	ID        string         `json:"id"`
	Direction SplitDirection `json:"direction"`
	Ratio     float64        `json:"ratio"`
	Rect      Rect           `json:"rect"`
}

// Layout is a tab's pane layout (herdr's PaneLayoutSnapshot).
type Layout struct {
	WorkspaceID   string        `json:"workspace_id"`
	TabID         string        `json:"tab_id"`
	Zoomed        bool          `json:"zoomed"`
	Area          Rect          `json:"area"`
	FocusedPaneID string        `json:"focused_pane_id"`
	Panes         []LayoutPane  `json:"panes"`
	Splits        []LayoutSplit `json:"splits"`
}

// Snapshot is the whole session at one instant (session.snapshot): the
// bootstrap state a subscriber reconciles replayed events against.
type Snapshot struct {
	Version            string          `json:"version"`
	Protocol           int             `json:"protocol"`
	FocusedWorkspaceID string          `json:"focused_workspace_id,omitempty"`
	FocusedTabID       string          `json:"focused_tab_id,omitempty"`
	FocusedPaneID      string          `json:"focused_pane_id,omitempty"`
	Workspaces         []WorkspaceInfo `json:"workspaces"`
	Tabs               []TabInfo       `json:"tabs"`
	Panes              []PaneInfo      `json:"panes"`
	Layouts            []Layout        `json:"layouts"`
	Agents             []AgentInfo     `json:"agents"`
}

// PaneRead is the text pane.read returned. Truncated means older rows were
// left out.
type PaneRead struct {
	PaneID      string     `json:"pane_id"`
	WorkspaceID string     `json:"workspace_id"`
	TabID       string     `json:"tab_id"`
	Source      ReadSource `json:"source"`
	Format      ReadFormat `json:"format"`
	Text        string     `json:"text"`
	Revision    uint64     `json:"revision"`
	Truncated   bool       `json:"truncated"`
}

// WorkspaceCreated is the answer to workspace.create.
type WorkspaceCreated struct {
	Workspace WorkspaceInfo `json:"workspace"`
	Tab       TabInfo       `json:"tab"`
	RootPane  PaneInfo      `json:"root_pane"`
}

// TabCreated is the answer to tab.create.
type TabCreated struct {
	Tab      TabInfo  `json:"tab"`
	RootPane PaneInfo `json:"root_pane"`
}
