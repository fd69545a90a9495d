package herdrbridge

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetd/fleetd/roles"
)

// Kind is what the delivery engine asks of one agent CLI — a role's
// "kind": how its screen shows a composer ready for a paste and a turn
// at work, how a text is typed into that composer so the model gets
// exactly the text, how a text no typing can keep is handed over as a
// file, and which keys bring the composer back when a turn left it dirty.
// The engine (queue, write-ahead typing, readiness, settling, deferral,
// attention, recovery, restart) is one piece of code that never names a
// CLI; each kind is a small room behind this interface (Claude is the
// first), measured against the real CLI (docs/<kind>-composer.md).
type Kind interface {
	// Name is the kind's word in a role ("claude").
	Name() string
	// ParseComposer finds the CLI's composer in a pane's visible text.
	ParseComposer(screen string) Composer
	// Working reports whether the screen shows a turn at work, when no
	// key may be pressed (Escape would interrupt it).
	Working(screen string) bool
	// PlanText decides how a normalised text is typed, or that it goes
	// as a file; PlanCommand how an explicit command is.
	PlanText(text string, l Limits) Plan
	PlanCommand(command string) Plan
	// HandOver is the short prompt that hands the file at path (size
	// bytes, sent as a file because why) to the agent.
	HandOver(path string, size int, why string) string
	// ClearKeys clear a draft from the composer (pressed escPause
	// apart); CloseKeys close a menu, dialog or overlay, or leave a
	// mode. Neither is ever pressed on an empty composer.
	ClearKeys() []string
	CloseKeys() []string
	// LazySession: the CLI starts its session (and its SessionStart
	// hook) only at the first prompt, so a spawned agent is ready once
	// its empty composer is on screen, not once its hooks report in.
	LazySession() bool
	// LaunchEnv is what the kind adds to an agent's pane environment
	// (nil for none); Install writes the kind's integration for that
	// one agent — its hooks, their trust, its endpoint — before its
	// launch, never into the user's own configuration.
	LaunchEnv(stateDir, agent string) map[string]string
	Install(in Install) error
}

// EnterDropper is a Kind whose CLI may drop the Enter that follows a
// paste, measured: the composer keeps the whole text, idle, and nothing
// submits it until another Enter. The engine then presses Enter once
// more after EnterAgainAfter rather than after the fleet-wide
// SubmitTimeout (the same single extra Enter, recorded first, never a
// second one), but only while the screen shows the turn not taken:
// Unsubmitted on two looks EnterAgainConfirm apart, no proof of
// submission from the hooks or herdr in between. A kind that is not an
// EnterDropper gets its extra Enter at SubmitTimeout only.
type EnterDropper interface {
	// EnterAgainAfter is how long after the typing (its Enter) the engine
	// first looks for a dropped Enter.
	EnterAgainAfter() time.Duration
	// Unsubmitted reports whether screen shows text (Plan.Shows) whole
	// in an idle composer: what a dropped Enter leaves, and what a
	// submitted prompt never does (submitting empties the composer).
	Unsubmitted(screen, text string) bool
}

// LazyClearer is a Kind whose CLI starts the new session a clear asks
// for only with the next prompt (a LazySession CLI): no hook can report
// the clear before the engine types that prompt, so for a fresh_context
// turn the engine types the kind's own command for a new session and
// sees it take effect on screen instead of waiting for a SessionStart
// whose source is "clear".
type LazyClearer interface {
	// ClearCommand is the CLI's command that starts a new session.
	ClearCommand() string
	// Cleared reports whether screen shows a new session, its empty
	// composer waiting for the session's first prompt: what the command
	// leaves, and what no earlier session's screen shows.
	Cleared(screen string) bool
}

// EnterAgainConfirm is how long a dropped Enter's screen must stay as it
// is (a second look) before the engine presses Enter once more: a CLI
// that took the Enter but has not yet drawn it would have drawn it by
// then.
const EnterAgainConfirm = 500 * time.Millisecond

// StatusSourceScreen is the source of a status the bridge read off an
// agent's screen: the empty composer of a kind whose session starts only
// with its first prompt (Kind.LazySession), before its hooks can tell.
const StatusSourceScreen = "screen"

// Install is what a kind's integration is written from.
type Install struct {
	StateDir, Agent, Cwd string
	Role                 roles.Role
	// HookCommand is the shell command that runs fleetd's hook of that
	// name (its command-line spelling: "stop", "user-prompt-submit").
	HookCommand func(arg string) string
	// MCP is the agent's `fleetd mcp` when its role reads by pull (a
	// main), nil otherwise: a kind with MCP writes it into the agent's
	// own configuration; Claude Code gets it with --mcp-config instead.
	MCP *MCPServer
}

// kinds are the rooms the engine knows, by name: each one a role may name
// (roles.Kinds). A further kind adds its room from its own file's init
// func.
var kinds = map[string]Kind{roles.KindClaude: Claude{}, roles.KindCodex: Codex{}}

// KindOf returns the room of a kind by name ("" is Claude Code, as for an
// agent registered before kinds existed), or an error naming the kinds
// there are.
func KindOf(name string) (Kind, error) {
	if name == "" {
		name = roles.KindClaude
	}
	k, ok := kinds[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (this fleetd drives %s)", ErrUnknownKind, name, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	return k, nil
}

// Claude is the room of Claude Code (2.1.328, docs/claude-composer.md).
type Claude struct{}

// Name is "claude".
func (Claude) Name() string { return roles.KindClaude }

// ParseComposer finds Claude Code's prompt box (ParseComposer).
func (Claude) ParseComposer(screen string) Composer { return ParseComposer(screen) }

// Working reports "esc to interrupt" at the bottom of the screen.
func (Claude) Working(screen string) bool { return screenWorking(screen) }

// PlanText is PlanText.
func (Claude) PlanText(text string, l Limits) Plan { return PlanText(text, l) }

// PlanCommand is PlanCommand.
func (Claude) PlanCommand(command string) Plan { return PlanCommand(command) }

// HandOver names the file with an @ mention: Claude Code reads it and
// attaches its content to the prompt, byte for byte.
func (Claude) HandOver(path string, size int, why string) string {
	return fmt.Sprintf("Your prompt for this turn is the whole content of @%s (%d bytes; it came as a file because %s). Read all of it and act on it as if it had been typed here.", path, size, why)
}

// ClearKeys: Esc twice clears a draft (in bash mode too).
func (Claude) ClearKeys() []string { return []string{"escape", "escape"} }

// CloseKeys: Esc closes a menu, dialog or overlay, and leaves bash mode.
func (Claude) CloseKeys() []string { return []string{"escape"} }

// LazySession: Claude Code reports its session as it starts.
func (Claude) LazySession() bool { return false }

// LaunchEnv: none; the role's command names the shared settings file.
func (Claude) LaunchEnv(string, string) map[string]string { return nil }

// Install: nothing per agent (the hooks are in the settings file that
// `claude --settings` reads, written by the gateway).
func (Claude) Install(Install) error { return nil }
