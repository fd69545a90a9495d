package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// Agent is one row of the roster.
type Agent struct {
	Agent  string `json:"agent"`
	Host   string `json:"host"`
	Pane   string `json:"pane,omitempty"`
	Role   string `json:"role,omitempty"`
	Tier   int    `json:"tier"`
	Parent string `json:"parent,omitempty"`
	Model  string `json:"model,omitempty"`
	// Kind is the agent's CLI ("claude", …: its role's kind).
	Kind   string `json:"kind,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
	Origin string `json:"origin,omitempty"`

	Status      events.Status `json:"status"`
	CurrentTurn string        `json:"current_turn,omitempty"`
	QueueDepth  int           `json:"queue_depth"`
	LastSeen    time.Time     `json:"last_seen,omitzero"`

	Tokens  events.Tokens `json:"tokens"`
	CostUSD float64       `json:"cost_usd,omitempty"`

	SessionID string `json:"session_id,omitempty"`
	Session   string `json:"session,omitempty"` // fleetd session name
	// Exited: the pane or process is gone. Stale: its host went silent.
	Exited    bool   `json:"exited,omitempty"`
	Stale     bool   `json:"stale,omitempty"`
	Violation string `json:"violation,omitempty"`
	// SessionEnded: the agent's hooks said its Claude Code session ended
	// (an /exit, a crash) and none started since: nothing is typed into
	// its pane, which may show a shell.
	SessionEnded bool `json:"session_ended,omitempty"`
	// NeedsAttention is why the gateway types nothing into the agent until
	// a person looks (its prompt box holds text, a dialog is open, its
	// pane shows a shell), with AttentionDetail saying what it saw.
	NeedsAttention  string `json:"needs_attention,omitempty"`
	AttentionDetail string `json:"attention_detail,omitempty"`
	// Dialog is the dialog the agent's CLI shows and waits on (a
	// permission prompt), as its gateway read it; nil when none.
	// POST /agents/{id}/answer answers it.
	Dialog *Dialog `json:"dialog,omitempty"`
	// Restarts counts the times its gateway restarted the agent after it
	// died (its role's restart policy); Restarting is set from the
	// decision until it runs again or the gateway gives up.
	Restarts   int  `json:"restarts,omitempty"`
	Restarting bool `json:"restarting,omitempty"`
	// Starting: fleetd spawned the agent and its Claude Code session has
	// not started yet. FailedToStart says why it never did (its command
	// exited, with what its pane showed; no session in time): a turn for
	// it is refused with that.
	Starting      bool   `json:"starting,omitempty"`
	FailedToStart string `json:"failed_to_start,omitempty"`

	// Worktree is the agent's own git worktree: where it is and what it
	// started from (its registration), where its branch stood after its
	// last turn (Head, Dirty, Ahead), and, once the agent exited, whether
	// it was removed or Kept and why.
	Worktree events.Worktree `json:"worktree,omitzero"`
	// Sandbox names the sandbox the agent was launched in.
	Sandbox string `json:"sandbox,omitempty"`

	// Budget is set when the agent is at 80% or more of a budget, its
	// own or its role's. The fold never sets it: budgets are the roles
	// file's, judged against the clock, so readers that know them
	// (package budget: the shim's roster, the dashboard) fill it in.
	Budget *BudgetState `json:"budget,omitempty"`
}

// The states of a BudgetState.
const (
	BudgetWarning   = "warning"
	BudgetExhausted = "exhausted"
)

// BudgetState is how an agent or a role stands against its budgets now:
// the limit furthest along (exhausted before warning), whose it is and
// when it frees up.
type BudgetState struct {
	// State is BudgetWarning (at 80% or more) or BudgetExhausted (100%).
	State string `json:"state"`
	// Scope is "role" (the role's budget, shared) or "agent" (the
	// agent's own, its role's agent_budget); Of names the role or agent.
	Scope string `json:"scope"`
	Of    string `json:"of"`
	// Limit is the roles file's name of the limit ("usd_per_day"); Used
	// and Max are in its unit.
	Limit string  `json:"limit"`
	Used  float64 `json:"used"`
	Max   float64 `json:"max"`
	// FreesAt is when usage is back under the state's threshold if
	// nothing more is used: under 100% for exhausted, 80% for warning.
	FreesAt time.Time `json:"frees_at,omitzero"`
}

// Exhausted reports whether b is an exhausted budget (nil is not).
func (b *BudgetState) Exhausted() bool { return b != nil && b.State == BudgetExhausted }

// String says it in a line: "role w-claude usd_per_day at 102% (20.4 of
// 20), frees at 2026-11-30T11:05:00Z".
func (b *BudgetState) String() string {
	if b == nil {
		return ""
	}
	s := fmt.Sprintf("%s %s %s at %.0f%% (%.4g of %.4g)", b.Scope, b.Of, b.Limit, 100*b.Used/b.Max, b.Used, b.Max)
	if !b.FreesAt.IsZero() {
		s += ", frees at " + b.FreesAt.UTC().Format(time.RFC3339)
	}
	return s
}

// Ready reports whether a new turn may be given to the agent now: alive,
// ready status, nothing queued or in flight, nothing for a person to fix.
func (a Agent) Ready() bool {
	return !a.Exited && !a.Stale && !a.SessionEnded && !a.Restarting && a.NeedsAttention == "" &&
		a.Status.Ready() && a.CurrentTurn == "" && a.QueueDepth == 0
}

// Open counts the agent's turns that are not final: queued on it, typed
// or submitted. A role's cap counts these.
func (a Agent) Open() int {
	if a.CurrentTurn != "" {
		return a.QueueDepth + 1
	}
	return a.QueueDepth
}

// OfRole is the agents of roster in role.
func OfRole(roster []*Agent, role string) []*Agent {
	return lo.Filter(roster, func(a *Agent, _ int) bool { return a.Role == role })
}

// Session is one named, resumable agent conversation.
type Session struct {
	Name      string `json:"name"`
	Agent     string `json:"agent"`
	SessionID string `json:"session_id,omitempty"`
	Tier      int    `json:"tier"`
	// State: "active" (its agent's pane is up), "ended" (Claude Code
	// ended it), "closed" (its pane is gone; resumable).
	State          string        `json:"state"`
	Turns          int           `json:"turns"`
	Tokens         events.Tokens `json:"tokens"`
	CostUSD        float64       `json:"cost_usd,omitempty"`
	Model          string        `json:"model,omitempty"`
	TranscriptPath string        `json:"transcript_path,omitempty"`
	StartedAt      time.Time     `json:"started_at,omitzero"`
	LastActive     time.Time     `json:"last_active,omitzero"`
	IdleDeadline   time.Time     `json:"idle_deadline,omitzero"`
	// Resume is how to continue it: the claude session id to pass to
	// `claude --resume`.
	Resume string `json:"resume,omitempty"`
}

// Host is one host as its gateway's up, heartbeat and down events tell.
type Host struct {
	Host string `json:"host"`
	// LastBeat is its last up or heartbeat event's time.
	LastBeat time.Time `json:"last_beat,omitzero"`
	// Down: its gateway said it stopped. Stale: down, silent longer
	// than Options.HostTTL, or judged silent by a router that released a
	// turn from one of its agents (events.ReasonHostStale) and not heard
	// from since; its agents are stale too.
	Down  bool `json:"down,omitempty"`
	Stale bool `json:"stale,omitempty"`
	// Unheard: agents are registered for it but its gateway has never
	// announced itself; LastBeat is then when its first agent was
	// registered, and it is stale HostTTL after that.
	Unheard bool `json:"unheard,omitempty"`
}

// Views is the read side the shim, the router and the CLI need. The
// materialized projection implements it; consumers may declare narrower
// interfaces.
type Views interface {
	// Roster lists every agent, sorted by id. The rows are shared with
	// every other caller, and a row stays the same *Agent while the
	// agent does not change: read them, or copy them before changing
	// anything (as budget.Checker.Decorate does).
	Roster() []*Agent
	// Agent returns one roster row.
	Agent(id string) (Agent, bool)
	// Sessions lists sessions, sorted by name.
	Sessions() []Session
	// Hosts lists the hosts the log announced, sorted by name, for a
	// dashboard's heartbeat ages.
	Hosts() []Host
	// Turns lists the turns the fold holds in memory that match (nil: all)
	// — every open turn and the final ones still cached (the latest
	// Options.TurnCacheSize; with Memory, all) — newest queued first.
	// Older final turns are only in KV: ask Turn for one by id. match
	// runs on copies after the views' lock is let go, so it may read the
	// views (a turn's agent, say).
	Turns(match func(lifecycle.Turn) bool) []lifecycle.Turn
	// Turn returns a turn's state (also turns no longer in memory, from KV).
	Turn(ctx context.Context, id string) (lifecycle.Turn, bool, error)
	// WaitTurn blocks until the turn satisfies done (checked at once and on
	// every change of the turn) or ctx ends. done, like Turns' match, runs
	// outside the views' lock and may read them.
	WaitTurn(ctx context.Context, id string, done func(lifecycle.Turn) bool) (lifecycle.Turn, error)
	// WaitSeq blocks until every event up to stream sequence seq has been
	// applied: read-your-writes after an append.
	WaitSeq(ctx context.Context, seq uint64) error
	// Applied is the last stream sequence folded.
	Applied() uint64
	// Version counts the changes the views made visible: it moves
	// whenever a roster row, session or turn changes — also with no new
	// event, as when the clock makes a silent host stale — so a cache of
	// an encoded view keys on it, not on Applied.
	Version() uint64
	// Usage is an agent's (kind KindAgent) or a role's (KindRole) model
	// usage in rolling windows, for budgets; empty when it has none.
	Usage(kind, id string) Usage
}

// Dialog is an open dialog of an agent's CLI (events.AgentDialog): what it
// asks, what about, and its options, numbered from 1 in order. Unanswered
// says why the last answer asked for could not be typed.
type Dialog struct {
	Title      string    `json:"title,omitempty"`
	Question   string    `json:"question"`
	Detail     string    `json:"detail,omitempty"`
	Options    []string  `json:"options"`
	Since      time.Time `json:"since"`
	Unanswered string    `json:"unanswered,omitempty"`
}
