package herdrbridge

import "errors"

// ErrAgentExists means a spawn or adoption named an agent that is already
// registered and has not exited: agent ids are unique fleet-wide.
var ErrAgentExists = errors.New("agent already registered")

// ErrNoResume means a spawn asked to resume a Claude session with a role
// whose command has no {resume} placeholder and is not claude.
var ErrNoResume = errors.New("role command cannot resume a session")

// ErrPaneOwned means an adoption named a pane another live agent owns.
var ErrPaneOwned = errors.New("pane already belongs to an agent")

// ErrBridgeRunning means Run was called on a Bridge that is running or ran.
var ErrBridgeRunning = errors.New("herdr bridge already running")

// ErrNoCredentials means a spawn named an agent that has no NATS key of its
// own while the bridge hands panes per-agent keys (Launch.AgentCreds, under
// 'fleetd auth'): its hooks could not report, and its gateway may not
// register it.
var ErrNoCredentials = errors.New("agent has no NATS credentials of its own")

// ErrSandboxExited means a spawned agent's sandbox ended before its agent
// reported in: a bad profile, a missing image or tool. The spawn was
// taken back (pane closed, worktree removed unless written to).
var ErrSandboxExited = errors.New("sandbox exited at once")

// ErrNotStarted means a spawn that waits for its agent (SpawnRequest.Wait)
// saw no Claude Code session start: its command exited (not found, a crash
// on start) or the wait ran out. The error says what the pane showed; the
// pane is closed and the agent recorded as having failed to start.
var ErrNotStarted = errors.New("agent did not start")

// ErrNoStateDir means a spawn needs fleetd's state directory (for a
// worktree) and the bridge was not given one (Launch.StateDir).
var ErrNoStateDir = errors.New("no state directory")

// ErrUnknownKind means a role or a registration names an agent kind this
// fleetd has no room for.
var ErrUnknownKind = errors.New("unknown agent kind")
