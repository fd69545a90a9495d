package eventcore

import (
	"strings"
	"time"
)

// Type is an event's CloudEvents type: fleet.<category>.<kind>. The subject
// an event is stored on is fleet.<category>.<aggregate id>.<kind>.
type Type string

// Category is the aggregate category the type belongs to.
func (t Type) Category() Category {
	c, _ := t.split()
	return c
}

// Kind is the last subject token of events of this type.
func (t Type) Kind() string {
	_, k := t.split()
	return k
}

// split cuts a type at its first two dots; every event's decode asks, so
// it allocates nothing.
func (t Type) split() (Category, string) {
	_, rest, ok := strings.Cut(string(t), ".")
	if !ok {
		return "", ""
	}
	c, k, ok := strings.Cut(rest, ".")
	if !ok {
		return "", ""
	}
	return Category(c), k
}

// The event types of DESIGN.md.
const (
	TypeAgentRegistered Type = "fleet.agent.registered"
	TypeAgentStatus     Type = "fleet.agent.status"
	TypeAgentQueued     Type = "fleet.agent.queued"
	TypeAgentTyped      Type = "fleet.agent.typed"
	TypeAgentSubmitted  Type = "fleet.agent.submitted"
	TypeAgentReplied    Type = "fleet.agent.replied"
	TypeAgentUsage      Type = "fleet.agent.usage"
	TypeAgentFailed     Type = "fleet.agent.failed"
	TypeAgentSession    Type = "fleet.agent.session"
	TypeAgentExited     Type = "fleet.agent.exited"
	TypeAgentDeferred   Type = "fleet.agent.deferred"
	TypeAgentAttention  Type = "fleet.agent.attention"
	TypeAgentDialog     Type = "fleet.agent.dialog"
	TypeAgentAnswer     Type = "fleet.agent.answer"
	TypeAgentReleased   Type = "fleet.agent.released"
	TypeAgentRestart    Type = "fleet.agent.restart"
	TypeAgentInbox      Type = "fleet.agent.inbox"
	TypeAgentInboxRead  Type = "fleet.agent.inbox_read"
	TypeRoleQueued      Type = "fleet.role.queued"
	TypeRoleCancelled   Type = "fleet.role.cancelled"
	// TypeAgentBudget and TypeRoleBudget are budget warnings: fleet.agent.<id>.budget_warning
	// and fleet.role.<role>.budget_warning.
	TypeAgentBudget Type = "fleet.agent.budget_warning"
	TypeRoleBudget  Type = "fleet.role.budget_warning"
	TypeHostUp      Type = "fleet.host.up"
	TypeHostDown    Type = "fleet.host.down"
	TypeHostHerdr   Type = "fleet.host.herdr"
	TypeJobCreated  Type = "fleet.job.created"
	TypeJobContext  Type = "fleet.job.context"
	TypeJobSliced   Type = "fleet.job.sliced"
	TypeJobTask     Type = "fleet.job.task"
	TypeJobDone     Type = "fleet.job.done"
)

// Data is the typed payload of one event type.
type Data interface {
	// EventType names the type this payload belongs to.
	EventType() Type
}

// Status is an agent's state as herdr and the hooks report it. Idle and
// done both mean ready for a prompt; done is idle and not yet seen.
type Status string

// The agent statuses (herdr's AgentStatus).
const (
	StatusIdle    Status = "idle"
	StatusWorking Status = "working"
	StatusBlocked Status = "blocked"
	StatusDone    Status = "done"
	StatusUnknown Status = "unknown"
)

// Ready reports whether a prompt may be typed: idle or done.
func (s Status) Ready() bool { return s == StatusIdle || s == StatusDone }

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusIdle, StatusWorking, StatusBlocked, StatusDone, StatusUnknown:
		return true
	}
	return false
}

// Tokens counts a turn's or a session's model usage.
type Tokens struct {
	In            int64 `json:"in"`
	Out           int64 `json:"out"`
	CacheRead     int64 `json:"cache_read,omitempty"`
	CacheCreation int64 `json:"cache_creation,omitempty"`
}

// Add returns t + o.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{In: t.In + o.In, Out: t.Out + o.Out, CacheRead: t.CacheRead + o.CacheRead, CacheCreation: t.CacheCreation + o.CacheCreation}
}

// AgentRegistered: an agent now exists in a pane of a host.
type AgentRegistered struct {
	Agent   string `json:"agent"`
	Host    string `json:"host"`
	Pane    string `json:"pane,omitempty"`
	Role    string `json:"role,omitempty"`
	Tier    int    `json:"tier"`
	Parent  string `json:"parent,omitempty"`
	Model   string `json:"model,omitempty"`
	Cwd     string `json:"cwd,omitempty" limit:"line"`
	Session string `json:"session,omitempty"` // named session the agent serves
	// How the agent came to be: "spawned" by fleetd, "adopted" by a person,
	// or "discovered" from a pane carrying FLEET_AGENT_ID.
	Origin string `json:"origin,omitempty"`
	// EnvClass is the role's env class the pane was launched under.
	EnvClass string `json:"env_class,omitempty"`
	// Worktree is the agent's own git worktree (its Cwd), when its role
	// gives it one: repo, path, branch and base, and the head at spawn.
	Worktree Worktree `json:"worktree,omitzero"`
	// Sandbox names the sandbox the agent was launched in.
	Sandbox string `json:"sandbox,omitempty"`
	// Kind is the agent's CLI (a role's kind: "claude", …); empty is
	// Claude Code, as for agents registered before kinds existed.
	Kind string `json:"kind,omitempty"`
}

// Worktree is an agent's own git worktree. A registration says where it
// is and what it started from; a reply where its branch stood after the
// turn (Branch, Head, Dirty, Ahead), so a lead can review or merge what
// that turn did; an exit whether it was removed or kept, and why.
type Worktree struct {
	Repo   string `json:"repo,omitempty" limit:"line"`
	Path   string `json:"path,omitempty" limit:"line"`
	Branch string `json:"branch,omitempty" limit:"line"`
	Base   string `json:"base,omitempty" limit:"line"`
	// Head is the commit checked out; Dirty counts files with uncommitted
	// changes (untracked ones included); Ahead counts the commits the
	// base does not have.
	Head  string `json:"head,omitempty"`
	Dirty int    `json:"dirty,omitempty"`
	Ahead int    `json:"ahead,omitempty"`
	// Removed (on an exit): the worktree was removed, being clean and
	// merged or pushed. Kept: why it was not — it holds work that would
	// be lost.
	Removed bool   `json:"removed,omitempty"`
	Kept    string `json:"kept,omitempty" limit:"text"`
}

// AgentStatusChanged: the agent's status as herdr or a hook saw it.
type AgentStatusChanged struct {
	Status Status `json:"status"`
	// Source is who observed it: "herdr", "hook", or "screen" (the gateway
	// read the agent ready off its screen before its hooks could tell).
	Source         string `json:"source"`
	Pane           string `json:"pane,omitempty"`
	StateChangeSeq uint64 `json:"state_change_seq,omitempty"`
	Detail         string `json:"detail,omitempty" limit:"text"`
	// Violation is set when the pane was found crossing its role's env
	// boundary (an env class it must not carry).
	Violation string `json:"violation,omitempty" limit:"line"`
}

// Normalization says what the text rule (lifecycle.Normalize) changed in
// a turn's text before it was queued: the lead's bytes are not all typed,
// and the turn says so instead of changing them silently.
type Normalization struct {
	// ControlSequences counts the escape sequences and control characters
	// removed.
	ControlSequences int `json:"control_sequences,omitempty"`
	// CarriageReturns counts \r\n and lone \r turned into \n.
	CarriageReturns int `json:"carriage_returns,omitempty"`
	// RemovedBytes is how much shorter the text became.
	RemovedBytes int `json:"removed_bytes,omitempty"`
}

// Changed reports whether the text was changed at all.
func (n Normalization) Changed() bool { return n != Normalization{} }

// AgentQueued: a turn was accepted for this agent. The event id is the
// turn id unless the turn came through a role queue (AssignedFrom).
// A turn carries either Text (a prompt) or Command (a slash command typed
// on purpose, e.g. "/clear"), never both.
type AgentQueued struct {
	From    string `json:"from,omitempty"`
	Text    string `json:"text" limit:"text"`
	Command string `json:"command,omitempty" limit:"text"`
	// Normalized is set when the lead's text was changed by the text rule
	// (Text is the normalised text).
	Normalized Normalization `json:"normalized,omitzero"`
	Context    []string      `json:"context,omitempty" limit:"line"`
	SliceRef   string        `json:"slice_ref,omitempty"`
	Deadline   time.Time     `json:"deadline,omitzero"`
	// AssignedFrom is the role whose queue this turn came from; then the
	// turn id is the role queued event's id (the correlation id).
	AssignedFrom string `json:"assigned_from,omitempty"`
	Job          string `json:"job,omitempty"`
	Task         string `json:"task,omitempty"`
	// Notify: when the turn ends, its reply (or failure) goes to the
	// sender's inbox as an AgentInbox message, instead of to a caller
	// blocked on it.
	Notify bool `json:"notify,omitempty"`
	// Kind is "" for a turn someone sent, or TurnKindNudge for the short
	// notification fleetd types into an idle main whose inbox holds
	// messages.
	Kind string `json:"kind,omitempty"`
}

// AgentInboxRead: every message of the agent's inbox up to stream
// sequence Through is acknowledged (its consumer's ack floor), written on
// fleet.agent.<agent>.inbox_read as acknowledgements move it. The inbox
// consumer is reclaimed by the server after days without a reader; made
// again, it starts after the last Through, so what was acknowledged is
// not handed out a second time and what was not is.
type AgentInboxRead struct {
	Through uint64 `json:"through"`
}

// TurnKindNudge is the kind of turn fleetd itself queues to tell an idle
// main that its inbox holds messages.
const TurnKindNudge = "nudge"

// AgentInbox: a message for an agent that reads by pull (a main, a lead),
// stored on fleet.agent.<agent>.inbox and consumed through the agent's
// durable consumer, so it waits, unacknowledged, until the agent has
// handled it. The event id is the message id.
type AgentInbox struct {
	From string `json:"from"`
	Text string `json:"text" limit:"text"`
	// ReplyTo is the id of the message this one answers.
	ReplyTo string `json:"reply_to,omitempty"`
	// Turn and Status are set on the notification of a turn sent with
	// notify: the turn and how it ended (replied or failed; Text is the
	// reply or why it failed).
	Turn   string `json:"turn,omitempty"`
	Status string `json:"status,omitempty"`
}

// AgentTyped: the owning gateway wrote the turn's prompt into the pane.
type AgentTyped struct {
	Pane string `json:"pane"`
	// Method is how: "agent.prompt", "pane.send_input", or
	// "pane.send_keys" for an extra Enter.
	Method         string `json:"method"`
	StateChangeSeq uint64 `json:"state_change_seq,omitempty"`
	Bytes          int    `json:"bytes"`
	// Enter counts extra Enter presses sent because no submission was seen.
	Enter int `json:"enter,omitempty"`
	// Delivery is how the text reaches the model: "paste" (one bracketed
	// paste), "pieces" (several pastes and cursor keys, so Claude Code's
	// composer keeps the text exactly), "file" (written to a file the
	// agent is handed by a short prompt) or "command" (a slash command).
	Delivery string `json:"delivery,omitempty"`
	// Pieces counts the pastes of a "pieces" delivery.
	Pieces int `json:"pieces,omitempty"`
	// File is the file a "file" delivery wrote the text to.
	File string `json:"file,omitempty" limit:"line"`
	// Prompt is what the agent's composer was given when that is not the
	// turn's text (the short prompt of a "file" delivery): what its
	// UserPromptSubmit hook will report.
	Prompt string `json:"prompt,omitempty" limit:"text"`
	// Clear: a "/clear" was typed first (the role asks for a fresh
	// context before every turn).
	Clear bool `json:"clear,omitempty"`
}

// AgentDeferred: herdr refused to type the turn before writing anything
// (the agent was not ready after all): the turn is back at the head of its
// agent's queue, to be typed when the agent is ready.
type AgentDeferred struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty" limit:"text"`
}

// AgentReleased: a role turn assigned to this agent and never typed goes
// back to its role's queue (the agent died, its pane exited, its host went
// stale), to be assigned again. It is appended on the agent's subject,
// guarded by the agent's last sequence, so it and the gateway's AgentTyped
// exclude each other: whichever is stored first wins, and a turn typed
// once is never released (nor typed again elsewhere). Its correlation id
// is the turn id; Attempt is the turn's release count after this one, and
// the RoleQueued that puts the turn back (RoleQueued.Requeue) carries the
// same number.
type AgentReleased struct {
	Role    string `json:"role"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty" limit:"text"`
}

// Restart states (AgentRestart.State).
const (
	// RestartRestarting: the agent died and its role restarts it, after
	// Delay.
	RestartRestarting = "restarting"
	// RestartRestarted: it runs again in a new pane (Pane), resuming its
	// Claude Code session (Resume) when it had one.
	RestartRestarted = "restarted"
	// RestartFailed: this attempt could not start it (Message says why).
	RestartFailed = "failed"
	// RestartGaveUp: the role's restart limit was reached; the agent stays
	// dead and needs attention.
	RestartGaveUp = "gave_up"
)

// AgentRestart: a step of the gateway restarting a dead agent under its
// role's restart policy. Attempt counts the restarts within the role's
// window, this one included.
type AgentRestart struct {
	State   string `json:"state"`
	Attempt int    `json:"attempt"`
	// Cause is why the agent is restarted: its process died, its pane
	// exited, its session ended.
	Cause   string        `json:"cause,omitempty" limit:"line"`
	Delay   time.Duration `json:"delay,omitempty"`
	Pane    string        `json:"pane,omitempty"`
	Resume  string        `json:"resume,omitempty"`
	Message string        `json:"message,omitempty" limit:"text"`
}

// AgentAttention: the gateway will not type into the agent until a person
// (or the agent) fixes what Reason says — its composer holds text, an
// overlay is open, its pane shows a shell. An empty Reason clears it.
type AgentAttention struct {
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty" limit:"text"`
}

// Dialog states (AgentDialog.State).
const (
	// DialogOpen: the agent's CLI shows the dialog and waits for a person.
	DialogOpen = "open"
	// DialogAnswered: fleetd typed the answer and the dialog went.
	DialogAnswered = "answered"
	// DialogUnanswered: an answer asked for could not be typed (no
	// dialog on screen, an unknown option, the dialog stayed): Message
	// says why; the dialog, if any, is still open.
	DialogUnanswered = "unanswered"
	// DialogClosed: the dialog went without an answer through fleetd
	// (answered at the pane, the turn interrupted, the agent gone).
	DialogClosed = "closed"
)

// AgentDialog: a dialog of the agent's CLI that waits for a person — a
// permission prompt — read from its screen by the owning gateway: its
// title, question, what it is about and its options in order (Answer and
// AgentAnswer.Option count from 1); and how it ended.
type AgentDialog struct {
	State    string   `json:"state"`
	Title    string   `json:"title,omitempty" limit:"line"`
	Question string   `json:"question,omitempty" limit:"line"`
	Detail   string   `json:"detail,omitempty" limit:"text"`
	Options  []string `json:"options,omitempty" limit:"line"`
	Answer   int      `json:"answer,omitempty"`
	By       string   `json:"by,omitempty" limit:"line"`
	Message  string   `json:"message,omitempty" limit:"text"`
}

// AgentAnswer asks the owning gateway to answer the agent's open dialog
// with its option Option (from 1), on behalf of By; the gateway records
// how it went as an AgentDialog (answered or unanswered).
type AgentAnswer struct {
	Option int    `json:"option"`
	By     string `json:"by,omitempty" limit:"line"`
}

// AgentSubmitted: the agent confirmed it took the prompt.
type AgentSubmitted struct {
	PromptID  string `json:"prompt_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Via is the evidence: "hook" (UserPromptSubmit) or "herdr" (working
	// with a new state_change_seq).
	Via            string `json:"via"`
	StateChangeSeq uint64 `json:"state_change_seq,omitempty"`
	Prompt         string `json:"prompt,omitempty" limit:"text"`
}

// AgentReplied: the agent's Stop hook fired; the turn is over.
type AgentReplied struct {
	Reply     string  `json:"reply" limit:"text"`
	PromptID  string  `json:"prompt_id,omitempty"`
	SessionID string  `json:"session_id,omitempty"`
	Model     string  `json:"model,omitempty"`
	Tokens    Tokens  `json:"tokens"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// UsagePending: the transcript did not show the turn's usage when
	// the reply was appended; a usage event for PromptID follows (the
	// hook's detached finisher waits for the transcript, so the reply
	// never does).
	UsagePending bool   `json:"usage_pending,omitempty"`
	Transcript   string `json:"transcript,omitempty" limit:"line"`
	// Worktree is where the agent's branch stood when the turn ended
	// (Branch, Head, Dirty, Ahead), for an agent with a worktree.
	Worktree Worktree `json:"worktree,omitzero"`
}

// AgentUsage: what a turn whose reply came with UsagePending cost, read
// from the agent's transcript once it showed the turn's end. It joins
// the reply by PromptID; budgets and cost count it as they count a
// reply's own tokens.
type AgentUsage struct {
	PromptID  string  `json:"prompt_id"`
	SessionID string  `json:"session_id,omitempty"`
	Model     string  `json:"model,omitempty"`
	Tokens    Tokens  `json:"tokens"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
}

// Failure reasons of DESIGN.md's turn lifecycle.
const (
	ReasonTimeout       = "timeout"
	ReasonPaneExited    = "pane_exited"
	ReasonBlocked       = "blocked"
	ReasonIndeterminate = "indeterminate"
	ReasonCancelled     = "cancelled"
	ReasonUnknownAgent  = "unknown_agent"
	// ReasonUnmatchedReply: the agent finished a turn, but its Stop hook's
	// reply was for another prompt (or none came): the turn is settled so
	// the next one can go.
	ReasonUnmatchedReply = "unmatched_reply"
	// ReasonAgentExited: the agent's Claude Code session ended and none
	// started again in time.
	ReasonAgentExited = "agent_exited"
	// ReasonNotReady: herdr kept refusing to type the turn.
	ReasonNotReady = "not_ready"
	// ReasonAgentDied: the agent's process died (its session ended
	// without an /exit, its shell is back in the foreground, its pane
	// exited) while the turn was typed and not finished. The prompt is
	// never typed again.
	ReasonAgentDied = "agent_died"
	// ReasonHostStale names the release of a role turn whose agent's host
	// went silent (AgentReleased.Reason).
	ReasonHostStale = "host_stale"
	// ReasonEmptyPrompt: nothing was left to type once the text rule was
	// applied.
	ReasonEmptyPrompt = "empty_prompt"
	// ReasonDenied: the agent asked permission for what the turn needed
	// and was answered No (AgentDialog).
	ReasonDenied = "denied"
)

// AgentFailed: the turn ended without a reply.
type AgentFailed struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty" limit:"text"`
}

// AgentSession: a Claude Code session started, resumed or ended in the pane.
type AgentSession struct {
	SessionID      string `json:"session_id"`
	State          string `json:"state"` // "started" or "ended"
	Source         string `json:"source,omitempty"`
	Reason         string `json:"reason,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty" limit:"line"`
	Model          string `json:"model,omitempty"`
	Cwd            string `json:"cwd,omitempty" limit:"line"`
	Name           string `json:"name,omitempty"` // fleetd's session name, if any
	// Message is what fleetd saw when it recorded an end itself (Reason
	// "died"): the last lines the agent's pane showed.
	Message string `json:"message,omitempty" limit:"text"`
}

// AgentExited: the agent's pane or process is gone.
type AgentExited struct {
	Pane   string `json:"pane,omitempty"`
	Reason string `json:"reason,omitempty" limit:"line"`
	// Worktree is what became of the agent's worktree: removed, or kept
	// and why.
	Worktree Worktree `json:"worktree,omitzero"`
	// StartFailed: the agent never got going — its spawn failed after it
	// was registered (its command exited, no session started in time);
	// Reason says why and what its pane showed.
	StartFailed bool `json:"start_failed,omitempty"`
}

// RoleQueued: a message for any agent of a role. Its id is the turn id.
type RoleQueued struct {
	From       string        `json:"from,omitempty"`
	Text       string        `json:"text" limit:"text"`
	Command    string        `json:"command,omitempty" limit:"text"`
	Normalized Normalization `json:"normalized,omitzero"`
	Context    []string      `json:"context,omitempty" limit:"line"`
	SliceRef   string        `json:"slice_ref,omitempty"`
	Deadline   time.Time     `json:"deadline,omitzero"`
	Job        string        `json:"job,omitempty"`
	Task       string        `json:"task,omitempty"`
	Notify     bool          `json:"notify,omitempty"`
	// Requeue is set when the turn goes back to the role's queue after
	// its n-th release (AgentReleased.Attempt): the correlation id is
	// then the turn id, and the event's id is derived from both.
	Requeue int `json:"requeue,omitempty"`
}

// RoleCancelled: a role turn that no agent has taken yet is cancelled
// (reason cancelled, as events.ReasonCancelled): it leaves its role's
// queue and is final. Its correlation id is the turn id, and its event id
// is the id the turn's next assignment would have (turns.Cancellation):
// JetStream's dedupe stores only the first of the two, so a router that
// decided on views read before the cancel cannot put the turn on an agent
// after it, and a cancel that comes after an assignment is refused.
type RoleCancelled struct {
	// By names who cancelled it (the signed-in identity or the lead).
	By      string `json:"by" limit:"line"`
	Message string `json:"message,omitempty" limit:"text"`
}

// BudgetWarning: an agent's or a role's usage in one budget window
// crossed Percent (80: a warning; 100: exhausted, new turns are refused
// until FreesAt) of the roles file's limit. It is written once per
// crossing fleet-wide (package budget), on the agent's subject
// (AgentBudgetWarning) or the role's (RoleBudgetWarning): the numbers are
// the projection's, so every host would write the same one.
type BudgetWarning struct {
	// Limit names the limit as the roles file does ("usd_per_day",
	// "tokens_per_hour"); Scope says whose it is: "role" (the role's
	// budget, shared by its agents) or "agent" (the role's agent_budget,
	// each agent's own).
	Limit string `json:"limit"`
	Scope string `json:"scope"`
	// Percent is the threshold crossed: 80 or 100.
	Percent int `json:"percent"`
	// Used and Max are the window's usage and the limit, in the limit's
	// unit (tokens or USD).
	Used float64 `json:"used"`
	Max  float64 `json:"max"`
	// FreesAt is when enough usage leaves the window to be under the
	// threshold again, if nothing more is used.
	FreesAt time.Time `json:"frees_at,omitzero"`
}

// AgentBudgetWarning is BudgetWarning stored on fleet.agent.<id>.budget_warning.
type AgentBudgetWarning struct{ BudgetWarning }

// RoleBudgetWarning is BudgetWarning stored on fleet.role.<role>.budget_warning.
type RoleBudgetWarning struct{ BudgetWarning }

// HostUp: a gateway started on the host.
type HostUp struct {
	Host      string `json:"host"`
	Version   string `json:"version,omitempty"`
	NATSURL   string `json:"nats_url,omitempty" limit:"line"`
	HTTPAddr  string `json:"http_addr,omitempty" limit:"line"`
	DataDir   string `json:"data_dir,omitempty" limit:"line"`
	PID       int    `json:"pid,omitempty"`
	Heartbeat bool   `json:"heartbeat,omitempty"`
	// Machine and Herdr say which herdr this gateway drives (the machine's
	// host name and the socket path), so `fleetd spawn` on that machine
	// can find the host that owns the panes it opens.
	Machine string `json:"machine,omitempty" limit:"line"`
	Herdr   string `json:"herdr,omitempty" limit:"line"`
}

// HostDown: a gateway stopped cleanly.
type HostDown struct {
	Host   string `json:"host"`
	Reason string `json:"reason,omitempty" limit:"line"`
}

// HostHerdr: the gateway connected to or lost its herdr.
type HostHerdr struct {
	Connected bool   `json:"connected"`
	Socket    string `json:"socket,omitempty" limit:"line"`
	Version   string `json:"version,omitempty"`
	Protocol  int    `json:"protocol,omitempty"`
	Error     string `json:"error,omitempty" limit:"text"`
}

// JobCreated: an orchestrator job started.
type JobCreated struct {
	Goal   string          `json:"goal,omitempty" limit:"text"`
	Plan   string          `json:"plan,omitempty" limit:"text"`
	Parent string          `json:"parent,omitempty"`
	Tasks  []TaskSpecBrief `json:"tasks,omitempty"`
}

// TaskSpecBrief is a plan task as recorded in JobCreated.
type TaskSpecBrief struct {
	ID    string   `json:"id"`
	To    string   `json:"to"`
	Needs []string `json:"needs,omitempty"`
}

// JobContext: an item joined the job's context store.
type JobContext struct {
	Key        string   `json:"key" limit:"line"`
	Tags       []string `json:"tags,omitempty"`
	Text       string   `json:"text" limit:"text"`
	Provenance string   `json:"provenance,omitempty" limit:"line"`
	Size       int      `json:"size"`
}

// JobSliced: a slice of context was handed to a task's session.
type JobSliced struct {
	Task      string   `json:"task"`
	Session   string   `json:"session,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Items     []string `json:"items" limit:"line"`
	Bytes     int      `json:"bytes"`
	Budget    int      `json:"budget"`
	Truncated []string `json:"truncated,omitempty" limit:"line"`
}

// Task states recorded in JobTask.
const (
	TaskSent     = "sent"
	TaskReplied  = "replied"
	TaskFailed   = "failed"
	TaskSkipped  = "skipped"
	TaskAssigned = "assigned"
)

// JobTask: a task of the job changed state.
type JobTask struct {
	Task   string `json:"task"`
	State  string `json:"state"`
	Turn   string `json:"turn,omitempty"`
	Agent  string `json:"agent,omitempty"`
	To     string `json:"to,omitempty"`
	Error  string `json:"error,omitempty" limit:"text"`
	Rollup string `json:"rollup,omitempty" limit:"text"`
}

// JobDone: the job finished.
type JobDone struct {
	Status string `json:"status"` // "ok" or "failed"
	Result string `json:"result,omitempty" limit:"text"`
	Error  string `json:"error,omitempty" limit:"text"`
}

func (AgentRegistered) EventType() Type    { return TypeAgentRegistered }
func (AgentStatusChanged) EventType() Type { return TypeAgentStatus }
func (AgentQueued) EventType() Type        { return TypeAgentQueued }
func (AgentTyped) EventType() Type         { return TypeAgentTyped }
func (AgentSubmitted) EventType() Type     { return TypeAgentSubmitted }
func (AgentReplied) EventType() Type       { return TypeAgentReplied }
func (AgentUsage) EventType() Type         { return TypeAgentUsage }
func (AgentFailed) EventType() Type        { return TypeAgentFailed }
func (AgentSession) EventType() Type       { return TypeAgentSession }
func (AgentExited) EventType() Type        { return TypeAgentExited }
func (AgentDeferred) EventType() Type      { return TypeAgentDeferred }
func (AgentAttention) EventType() Type     { return TypeAgentAttention }
func (AgentDialog) EventType() Type        { return TypeAgentDialog }
func (AgentAnswer) EventType() Type        { return TypeAgentAnswer }
func (AgentReleased) EventType() Type      { return TypeAgentReleased }
func (AgentRestart) EventType() Type       { return TypeAgentRestart }
func (AgentInbox) EventType() Type         { return TypeAgentInbox }
func (AgentInboxRead) EventType() Type     { return TypeAgentInboxRead }
func (RoleQueued) EventType() Type         { return TypeRoleQueued }
func (RoleCancelled) EventType() Type      { return TypeRoleCancelled }
func (AgentBudgetWarning) EventType() Type { return TypeAgentBudget }
func (RoleBudgetWarning) EventType() Type  { return TypeRoleBudget }
func (HostUp) EventType() Type             { return TypeHostUp }
func (HostDown) EventType() Type           { return TypeHostDown }
func (HostHerdr) EventType() Type          { return TypeHostHerdr }
func (JobCreated) EventType() Type         { return TypeJobCreated }
func (JobContext) EventType() Type         { return TypeJobContext }
func (JobSliced) EventType() Type          { return TypeJobSliced }
func (JobTask) EventType() Type            { return TypeJobTask }
func (JobDone) EventType() Type            { return TypeJobDone }
