package herdrbridge

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fleetd/fleetd/roles"
)

// Codex is the room of OpenAI's Codex CLI (0.169.0, docs/codex-composer.md).
// Its composer is a "›" row (continuation rows indented two spaces) above
// a status row ("<model> <effort> · <cwd>") and, while the composer is
// empty, the footer "? for shortcuts"; a turn at work shows "esc to
// interrupt" above it. fleetd launches it with paste-burst detection off
// (CodexConfig), so a paste and an Enter 300 ms later are a submit.
type Codex struct{}

// Name is "codex".
func (Codex) Name() string { return roles.KindCodex }

// codexPrompt starts the composer's first row; the command and file
// popups list their entries with it too, above the composer, so the
// composer is the last such row.
const codexPrompt = "›"

// ParseComposer finds Codex's composer: the last "›" row (or "!" in
// shell mode) followed, after its continuation rows, by the status row
// with its " · " separators, and at most a footer below. Empty when the
// footer offers "? for shortcuts", which Codex shows only then (the
// greyed placeholder in the row reads like text).
func (Codex) ParseComposer(screen string) Composer {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	start := -1
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-40; i-- {
		r := rows[i]
		if strings.HasPrefix(r, codexPrompt) || r == "!" || strings.HasPrefix(r, "! ") {
			start = i
			break
		}
	}
	if start < 0 {
		return Composer{}
	}
	var text []string
	status := -1
	for i := start; i < len(rows); i++ {
		r := rows[i]
		if i > start && strings.HasPrefix(r, "  ") && strings.Contains(r, " · ") && strings.TrimSpace(r) != "" && !strings.HasPrefix(r, "   ") {
			status = i
			break
		}
		if i == start {
			r = strings.TrimPrefix(strings.TrimPrefix(r, codexPrompt), "!")
		} else {
			r = strings.TrimPrefix(r, "  ")
		}
		text = append(text, r)
	}
	// The status row and at most two rows below it (the footer).
	if status < 0 || len(rows)-status > 3 {
		return Composer{}
	}
	if codexPicker(rows[start], rows[status]) {
		return Composer{}
	}
	c := Composer{Visible: true, Bash: strings.HasPrefix(rows[start], "!")}
	if c.Bash || !strings.Contains(strings.Join(rows[status:], "\n"), "? for shortcuts") {
		c.Text = strings.TrimSpace(strings.Join(text, "\n"))
		if c.Text == "" && !c.Bash {
			// Neither the empty composer's hint nor text: a state fleetd
			// does not know; never take it for an empty composer.
			c.Text = "(no text, and no shortcuts hint)"
		}
	}
	return c
}

// codexPicker reports one of Codex's selection lists where the composer
// was (/permissions, measured with 0.169.0): "› 1. Ask for approval
// (current)" at the selected entry, the others below it indented, and
// under them a row of its keys ("enter select · esc back") where the
// composer has its status row. Read as a composer, the list looked like
// a draft, and recovery pressed the draft's Ctrl-C, not the Escape that
// closes it. A draft of numbered rows keeps the status row under it.
func codexPicker(first, below string) bool {
	entry := strings.TrimLeft(strings.TrimPrefix(first, codexPrompt), " ")
	digits := len(entry) - len(strings.TrimLeft(entry, "0123456789"))
	return digits > 0 && strings.HasPrefix(entry[digits:], ". ") && strings.Contains(below, "esc ")
}

// Working reports "esc to interrupt" at the bottom of the screen.
func (Codex) Working(screen string) bool { return screenWorking(screen) }

// CodexLimits bound a typed text for Codex: one paste (Codex shows a
// long paste as a placeholder; fleetd has not measured where, so it
// stays well below) of at most 1 KiB; longer goes as a file.
var CodexLimits = Limits{PieceUnits: 1024, PieceNewlines: 1 << 20, MaxPieces: 1, MaxPasteBytes: 1 << 10}

// PlanText types a text as one paste when Codex keeps it as it is, else
// it goes as a file. Measured with 0.169.0: a leading "!" (even pasted)
// is shell mode, a leading "/" opens the command popup (an unknown
// command stays in the composer, the cursor at its start), a leading "@"
// the file and skill popup whose Enter inserts; "@" inside a text and a
// "?" are text. fleetd does not type any of the first three, after white
// space either, nor tabs, trailing white space, invisible characters or
// line separators it has not measured.
func (Codex) PlanText(text string, l Limits) Plan {
	if why := codexMustGoAsFile(text); why != "" {
		return Plan{Delivery: DeliveryFile, Why: why}
	}
	if len(text) > CodexLimits.MaxPasteBytes {
		return Plan{Delivery: DeliveryFile, Why: fmt.Sprintf("it is longer than %d bytes", CodexLimits.MaxPasteBytes)}
	}
	return Plan{Delivery: DeliveryPaste, Pieces: []string{text}}
}

func codexMustGoAsFile(text string) string {
	lead := strings.TrimLeftFunc(text, isJSSpace)
	if lead != "" && strings.ContainsRune("!/@", rune(lead[0])) {
		return fmt.Sprintf("it starts with %q, which switches Codex's composer to a shell, a command or a file popup", lead[:1])
	}
	if r, _ := utf8.DecodeLastRuneInString(text); unicode.IsSpace(r) || r == '\ufeff' {
		return "it ends in white space, which Codex may trim"
	}
	for _, r := range text {
		switch {
		case r == '\t':
			return "it contains tabs"
		case r == '\u2028' || r == '\u2029':
			return "it contains Unicode line separators"
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("it contains the invisible character %U", r)
		}
	}
	return ""
}

// PlanCommand is the command, pasted, then Enter.
func (Codex) PlanCommand(command string) Plan { return PlanCommand(command) }

// HandOver names the file by its path: Codex has no attachment by
// mention ("@" opens a popup), so the model reads it with its own tools.
func (Codex) HandOver(path string, size int, why string) string {
	return fmt.Sprintf("Your prompt for this turn is the whole content of the file %s (%d bytes; it came as a file because %s). Read all of it and act on it as if it had been typed here.", path, size, why)
}

// ClearCommand is "/clear" ("clear the terminal and start a new chat"):
// Codex 0.169.0 starts the new thread, and runs its SessionStart hook
// (source "clear"), only with the next prompt, so the engine cannot wait
// for the hook before typing that prompt; it reads the clear off the
// screen (Cleared).
func (Codex) ClearCommand() string { return "/clear" }

// codexLogo is the top row of the logo Codex draws under its banner on a
// new chat's screen, and on no screen of a chat that has a turn.
const codexLogo = "⣀⣤⣤⣤⣀⣀"

// Cleared reports a new chat's screen, what /clear leaves: the logo above
// an empty composer. A chat with a turn shows the banner without the
// logo, so a /clear not yet run never reads as done.
func (k Codex) Cleared(screen string) bool {
	return strings.Contains(screen, codexLogo) && k.ParseComposer(screen).Empty()
}

// ClearKeys: Ctrl-C clears a draft (on an empty composer it would quit,
// which recovery never presses).
func (Codex) ClearKeys() []string { return []string{"ctrl+c"} }

// CloseKeys: Esc closes a popup and leaves shell mode.
func (Codex) CloseKeys() []string { return []string{"escape"} }

// LazySession: Codex fires SessionStart with the first prompt.
func (Codex) LazySession() bool { return true }

// LaunchEnv gives the agent its own CODEX_HOME in fleetd's state dir.
func (Codex) LaunchEnv(stateDir, agent string) map[string]string {
	if stateDir == "" {
		return nil
	}
	return map[string]string{"CODEX_HOME": codexHome(stateDir, agent)}
}

// Install writes the agent's CODEX_HOME (writeCodexHome).
func (Codex) Install(in Install) error {
	if in.StateDir == "" {
		return fmt.Errorf("codex: %w for the agent's CODEX_HOME", ErrNoStateDir)
	}
	return writeCodexHome(codexHome(in.StateDir, in.Agent), in.Cwd, in.Role, in.HookCommand, in.MCP)
}

func codexHome(stateDir, agent string) string { return filepath.Join(stateDir, "codex", agent) }
