package orchestrator

import (
	"context"
	"time"

	"github.com/fleetd/fleetd/lifecycle"
)

// SpawnSpec is what the session manager asks a Spawner to start.
type SpawnSpec struct {
	// Agent is the new agent's id (fleet-wide unique).
	Agent string
	Role  string
	// Tier is the depth in the recursion: 1 mains, 2 workers, ….
	Tier int
	// Parent is the agent (or "orchestrator") that owns the session.
	Parent string
	// Session is the fleetd session name the agent serves; it must appear
	// as AgentRegistered.Session.
	Session string
	// Resume is the Claude Code session id to continue: the role's command
	// gets `--resume <Resume>`. Empty starts a fresh conversation.
	Resume string
	Model  string
	Cwd    string
}

// Spawner starts and stops agent panes. cmd adapts herdrbridge's spawn to
// it; tests use a fake that appends the same events.
type Spawner interface {
	// Spawn starts a pane running the role's command for spec.Agent. It
	// returns once the agent's AgentRegistered event (origin "spawned",
	// Session = spec.Session) is in the log, so the caller can bind the
	// session to it at once.
	Spawn(ctx context.Context, spec SpawnSpec) error
	// Close ends the agent's pane; an AgentExited event follows. The
	// session it served stays resumable.
	Close(ctx context.Context, agent string) error
}

// Message is one turn to send: the shim's POST /message body as a struct.
type Message struct {
	// To is an agent id or role:R.
	To   string
	Text string
	// Command, instead of Text, types a slash command on purpose.
	Command string
	From    string
	// Context are the selectors (keys, tag:T) the slice was cut by.
	Context  []string
	SliceRef string
	Job      string
	Task     string
	Deadline time.Time
	// Turn, when set, is the turn id to use (a ULID). The orchestrator
	// records it before sending so a crash between the two re-sends the
	// same turn (an idempotent append) instead of a second one.
	Turn string
}

// Sender queues turns and waits for their end. LogSender is the default;
// it takes the same path as the lead shim.
type Sender interface {
	// Send queues the message as a turn and returns its id.
	Send(ctx context.Context, m Message) (turnID string, err error)
	// Wait blocks until the turn is replied or failed (a failed turn is
	// not an error) or ctx ends.
	Wait(ctx context.Context, turnID string) (lifecycle.Turn, error)
}

// TurnWaiter is the part of projections.Views a LogSender needs.
type TurnWaiter interface {
	WaitTurn(ctx context.Context, id string, done func(lifecycle.Turn) bool) (lifecycle.Turn, error)
}
