package lifecycle

import (
	"time"

	"github.com/fleetd/fleetd/events"
)

// State is where a turn is in its lifecycle.
type State string

// The turn states. Queued turns wait for an agent (role turns) or for
// their agent's pane; Typed and Submitted are in flight; Replied and
// Failed are final.
const (
	StateQueued    State = "queued"
	StateTyped     State = "typed"
	StateSubmitted State = "submitted"
	StateReplied   State = "replied"
	StateFailed    State = "failed"
)

// Final reports whether no further event can change the turn.
func (s State) Final() bool { return s == StateReplied || s == StateFailed }

// InFlight reports whether the prompt may be in the agent's pane.
func (s State) InFlight() bool { return s == StateTyped || s == StateSubmitted }

// Turn is one prompt to one agent and its one reply.
type Turn struct {
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
	// Role is the role the turn was sent to (role:R) or assigned from.
	Role string `json:"role,omitempty"`
	From string `json:"from,omitempty"`
	Text string `json:"text"`
	// Command is set instead of Text for a turn that types a slash command
	// on purpose ("/clear"); it completes when the agent is idle again,
	// with no reply text.
	Command string `json:"command,omitempty"`
	// Normalized says what the text rule changed in the lead's text.
	Normalized events.Normalization `json:"normalized,omitzero"`
	Context    []string             `json:"context,omitempty"`
	SliceRef   string               `json:"slice_ref,omitempty"`
	Deadline   time.Time            `json:"deadline,omitzero"`
	Job        string               `json:"job,omitempty"`
	Task       string               `json:"task,omitempty"`
	// Notify: the turn's end goes to the sender's inbox.
	Notify bool `json:"notify,omitempty"`
	// Nudge marks fleetd's own notification that the agent's inbox holds
	// messages (an AgentQueued of kind events.TurnKindNudge).
	Nudge bool `json:"nudge,omitempty"`

	State State `json:"state"`

	QueuedAt    time.Time `json:"queued_at,omitzero"`
	AssignedAt  time.Time `json:"assigned_at,omitzero"`
	TypedAt     time.Time `json:"typed_at,omitzero"`
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	RepliedAt   time.Time `json:"replied_at,omitzero"`
	FailedAt    time.Time `json:"failed_at,omitzero"`

	Pane           string `json:"pane,omitempty"`
	Method         string `json:"method,omitempty"`
	StateChangeSeq uint64 `json:"state_change_seq,omitempty"`
	// Enter counts the extra Enter presses sent because no submission was
	// seen in time.
	Enter        int    `json:"enter,omitempty"`
	SubmittedVia string `json:"submitted_via,omitempty"`
	// Delivery, Pieces, File and Prompt say how the text was typed (see
	// events.AgentTyped); Prompt is what the agent's hooks report when it
	// is not the text itself.
	Delivery string `json:"delivery,omitempty"`
	Pieces   int    `json:"pieces,omitempty"`
	File     string `json:"file,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Clear    bool   `json:"clear,omitempty"`
	// Deferrals counts the times herdr refused to type the turn (it went
	// back to the head of its queue each time).
	Deferrals int `json:"deferrals,omitempty"`
	// Releases counts the times this role turn, assigned and never typed,
	// went back to its role's queue (events.AgentReleased): its agent
	// died or its host went stale. ReleasedFrom is the agent of the last
	// release, ReleasedAt when. Requeued is the release whose RoleQueued
	// (events.RoleQueued.Requeue) the log holds: while it is below
	// Releases, the role's router has not been told.
	Releases     int       `json:"releases,omitempty"`
	ReleasedFrom string    `json:"released_from,omitempty"`
	ReleasedAt   time.Time `json:"released_at,omitzero"`
	Requeued     int       `json:"requeued,omitempty"`
	// StrayReplies counts Stop hooks, while this turn was in flight, whose
	// reply was for another prompt: the agent is idle again, and this
	// turn's reply is not coming.
	StrayReplies int `json:"stray_replies,omitempty"`

	PromptID  string        `json:"prompt_id,omitempty"`
	SessionID string        `json:"session_id,omitempty"`
	Model     string        `json:"model,omitempty"`
	Reply     string        `json:"reply,omitempty"`
	Tokens    events.Tokens `json:"tokens"`
	CostUSD   float64       `json:"cost_usd,omitempty"`
	// UsagePending: the turn replied before its usage could be read; a
	// usage event brings Tokens and CostUSD.
	UsagePending bool `json:"usage_pending,omitempty"`
	// OtherPrompts are prompt ids the agent's hooks reported for other
	// prompts while this turn was in flight (a prompt Claude took late,
	// after its turn was given up on, or one typed by hand): their events
	// never join this turn.
	OtherPrompts []string `json:"other_prompts,omitempty"`

	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`

	// QueueSeq is the stream sequence of the queued event on the agent:
	// the turn's place in the agent's queue.
	QueueSeq uint64 `json:"queue_seq,omitempty"`
	// LastSeq is the stream sequence of the last event applied.
	LastSeq uint64 `json:"last_seq,omitempty"`
	// FirstSeq is the stream sequence of the first event applied (the
	// queued event): while the turn is open, the log must keep everything
	// from here on (retention never trims past it).
	FirstSeq uint64 `json:"first_seq,omitempty"`
}

// Releasable reports whether the turn may go back to its role's queue: a
// role turn assigned to an agent and not typed. Once typed, a turn is
// never released — it replies or fails.
func (t *Turn) Releasable() bool {
	return t.State == StateQueued && t.Agent != "" && t.Role != ""
}

// Kinds of turn.
const (
	KindPrompt  = "prompt"
	KindCommand = "command"
	// KindNudge is typed like a prompt but is fleetd's own: never preceded
	// by a role's /clear, at most one open per agent.
	KindNudge = events.TurnKindNudge
)

// Kind is KindCommand for a slash-command turn, KindNudge for a nudge,
// else KindPrompt.
func (t *Turn) Kind() string {
	switch {
	case t.Command != "":
		return KindCommand
	case t.Nudge:
		return KindNudge
	}
	return KindPrompt
}

// Expected is what the agent's UserPromptSubmit hook reports for this
// turn: the short prompt a "file" delivery typed, the command of a
// command turn, else the turn's (normalised) text.
func (t *Turn) Expected() string {
	switch {
	case t.Prompt != "":
		return t.Prompt
	case t.Command != "":
		return t.Command
	}
	return NormalizeText(t.Text)
}

// EndedAt is when the turn became final, or zero.
func (t *Turn) EndedAt() time.Time {
	switch t.State {
	case StateReplied:
		return t.RepliedAt
	case StateFailed:
		return t.FailedAt
	}
	return time.Time{}
}

// Duration is queued → final, or zero while the turn is open.
func (t *Turn) Duration() time.Duration {
	end := t.EndedAt()
	if end.IsZero() || t.QueuedAt.IsZero() {
		return 0
	}
	return end.Sub(t.QueuedAt)
}

// TurnID is the turn an event belongs to: its correlation id, or for a
// queued event without one, its own id.
func TurnID(ev events.Event) string {
	if ev.CorrelationID != "" {
		return ev.CorrelationID
	}
	switch ev.Data.(type) {
	case events.AgentQueued, events.RoleQueued:
		return ev.ID
	}
	return ""
}
