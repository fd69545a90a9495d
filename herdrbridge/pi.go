package herdrbridge

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/fleetd/fleetd/roles"
)

// Pi is the room of Pi, the coding agent (@mariozechner/pi-coding-agent
// 0.73.1, docs/pi-composer.md). Pi draws inline, not on the alternate
// screen: its editor is the rows between two "───" rules right below the
// conversation, then its cwd row and its footer (context use and model),
// and blank rows to the bottom of the screen until the conversation fills
// it. A turn at work shows a spinner row ("⠹ Working...") above the
// editor. Pi has no command hooks: fleetd's extension, loaded from the
// agent's own directory (writePiHome), runs fleetd's hooks from Pi's
// session_start, input and agent_end events.
type Pi struct{}

func init() { kinds[roles.KindPi] = Pi{} }

// Name is "pi".
func (Pi) Name() string { return roles.KindPi }

// piFooter is Pi's footer row: its context use ("1.1%/128k"), always
// there, also before the first turn ("0.0%/128k (auto)"); "?/128k" right
// after a compaction.
func piFooter() *regexp.Regexp { return regexps().piFooter }

// piMaxBelow bounds the rows between the editor's bottom rule and the
// footer: the cwd row and an autocomplete list (at most five entries and
// its "(1/21)" count).
const piMaxBelow = 12

// piMaxEditor bounds the editor's rows (Pi scrolls a longer draft).
const piMaxEditor = 40

// isPiRule reports a row of Pi's rules: "─" all along, or with the
// scroll indicator of a longer draft ("─── ↑ 3 more ───").
func isPiRule(row string) bool {
	row = strings.TrimSpace(row)
	if utf8.RuneCountInString(row) < 8 || !strings.HasPrefix(row, "───") {
		return false
	}
	if rest := strings.Trim(row, "─"); rest != "" {
		f := strings.Fields(rest)
		return len(f) == 3 && (f[0] == "↑" || f[0] == "↓") && f[2] == "more"
	}
	return true
}

// piEditor finds the editor's rules: top and bottom row indexes, or -1s
// when the screen does not show Pi's editor above its footer.
func piEditor(rows []string) (top, bottom int) {
	footer := -1
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-60; i-- {
		if strings.TrimSpace(rows[i]) == "" {
			continue
		}
		if piFooter().MatchString(rows[i]) {
			footer = i
		}
		break
	}
	if footer < 0 {
		return -1, -1
	}
	bottom = -1
	for i := footer - 1; i >= 0 && i >= footer-piMaxBelow; i-- {
		if isPiRule(rows[i]) {
			bottom = i
			break
		}
	}
	if bottom < 0 {
		return -1, -1
	}
	for i := bottom - 1; i >= 0 && i >= bottom-piMaxEditor; i-- {
		if isPiRule(rows[i]) {
			return i, bottom
		}
	}
	return -1, -1
}

// ParseComposer finds Pi's editor: the rows between the last two rules
// above the footer, its text as shown (a long paste shows as Pi's "[paste
// #1 +20 lines]" marker). Bash means the draft starts with "!", which Pi
// runs in a shell on Enter. A selector (/model, /tree) that takes the
// editor's place is no composer: a menu covers it.
func (Pi) ParseComposer(screen string) Composer {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	top, bottom := piEditor(rows)
	if top < 0 {
		return Composer{}
	}
	var text []string
	for _, r := range rows[top+1 : bottom] {
		if piSelectorRow(r) {
			// A selector (/model, /settings, /resume, /tree) in the
			// editor's place: a menu covers the composer.
			return Composer{}
		}
		text = append(text, strings.TrimRight(r, " \u00a0"))
	}
	c := Composer{Visible: true, Text: strings.Trim(strings.Join(text, "\n"), "\n")}
	// Pi's "bash mode" is no mode but a draft that starts with "!": the
	// text stays, so recovery clears it (Ctrl-C) as any draft; Esc would
	// leave it there.
	c.Bash = strings.HasPrefix(strings.TrimLeft(c.Text, " "), "!")
	return c
}

// piSelectorCount is a selector's "(1/24)" row.
func piSelectorCount() *regexp.Regexp { return regexps().piSelectorCount }

// piSelectorRow reports a row of Pi's selectors: its chosen entry ("→ "
// or "› ") or its count. The editor's own rows start at its left edge
// with what was typed.
func piSelectorRow(r string) bool {
	return strings.HasPrefix(r, "→ ") || strings.HasPrefix(r, "› ") || piSelectorCount().MatchString(r)
}

// Working reports Pi's spinner row (a braille frame, "Working...",
// "Compacting…", a retry's countdown) in the rows just above the editor.
func (Pi) Working(screen string) bool {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	top, _ := piEditor(rows)
	if top < 0 {
		return false
	}
	for i, seen := top-1, 0; i >= 0 && seen < 3; i-- {
		r := strings.TrimSpace(rows[i])
		if r == "" {
			continue
		}
		seen++
		if first, _ := utf8.DecodeRuneInString(r); first >= 0x2800 && first <= 0x28ff {
			return true
		}
	}
	return false
}

// PlanText types a text as one paste when Pi keeps it as it is, else it
// goes as a file. Measured with 0.73.1 (docs/pi-composer.md): Pi trims
// the draft it submits; a leading "!" (after white space too) runs the
// rest in a shell, a leading "/" may be one of its commands, an
// extension's, a skill or a prompt template; a tab becomes four spaces;
// a control character is dropped; a draft ending in "\" takes Enter as a
// new line. A paste of more than ten lines or 1000 characters shows as a
// marker and reaches the model whole; "@" and "#" open no popup when
// pasted and stay text.
func (Pi) PlanText(text string, l Limits) Plan {
	if why := piMustGoAsFile(text); why != "" {
		return Plan{Delivery: DeliveryFile, Why: why}
	}
	if max := l.withDefaults().MaxPasteBytes; len(text) > max {
		return Plan{Delivery: DeliveryFile, Why: fmt.Sprintf("it is longer than %d bytes", max)}
	}
	return Plan{Delivery: DeliveryPaste, Pieces: []string{text}}
}

func piMustGoAsFile(text string) string {
	if first, _ := utf8.DecodeRuneInString(text); isJSSpace(first) {
		return "it starts with white space, which Pi trims"
	}
	if last, _ := utf8.DecodeLastRuneInString(text); isJSSpace(last) {
		return "it ends in white space, which Pi trims"
	}
	switch {
	case strings.HasPrefix(text, "!"):
		return `it starts with "!", which runs the rest in Pi's shell`
	case strings.HasPrefix(text, "/"):
		return `it starts with "/", which may be one of Pi's commands, a skill or a prompt template`
	case strings.HasSuffix(text, `\`):
		return `it ends in "\", which makes Pi's Enter a new line`
	}
	for _, r := range text {
		switch {
		case r == '\t':
			return "it contains tabs, which Pi's editor turns into spaces"
		case r < 0x20 && r != '\n':
			return fmt.Sprintf("it contains the control character %U, which Pi's editor drops", r)
		}
	}
	return ""
}

// PlanCommand is the command, pasted, then Enter.
func (Pi) PlanCommand(command string) Plan { return PlanCommand(command) }

// HandOver names the file by its path: Pi attaches nothing by mention in
// its editor ("@" only completes a path), so the model reads it with its
// read tool.
func (Pi) HandOver(path string, size int, why string) string {
	return fmt.Sprintf("Your prompt for this turn is the whole content of the file %s (%d bytes; it came as a file because %s). Read all of it and act on it as if it had been typed here.", path, size, why)
}

// ClearKeys: Ctrl-C clears a draft (twice within 500 ms on an empty
// editor would quit, which recovery never presses).
func (Pi) ClearKeys() []string { return []string{"ctrl+c"} }

// CloseKeys: Esc closes an autocomplete list or a selector. (Esc twice on
// an empty editor would open the session tree: fleetd's settings turn
// that off.)
func (Pi) CloseKeys() []string { return []string{"escape"} }

// LazySession: Pi's extension reports the session as Pi starts.
func (Pi) LazySession() bool { return false }

// LaunchEnv gives the agent its own agent directory (settings, models,
// fleetd's extension) and the session directory all of fleetd's Pi agents
// share, so any of them resumes a session by its id; Pi stays offline
// (without PI_OFFLINE it downloads fd and ripgrep as it starts) and quiet.
func (Pi) LaunchEnv(stateDir, agent string) map[string]string {
	env := map[string]string{"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
	if stateDir != "" {
		env["PI_CODING_AGENT_DIR"] = piHome(stateDir, agent)
		env["PI_CODING_AGENT_SESSION_DIR"] = piSessions(stateDir)
	}
	return env
}

// Install writes the agent's own directory (writePiHome).
func (Pi) Install(in Install) error {
	if in.StateDir == "" {
		return fmt.Errorf("pi: %w for the agent's directory", ErrNoStateDir)
	}
	return writePiHome(piHome(in.StateDir, in.Agent), in.Role, in.HookCommand, in.MCP)
}

func piHome(stateDir, agent string) string { return filepath.Join(stateDir, "pi", "agents", agent) }
func piSessions(stateDir string) string    { return filepath.Join(stateDir, "pi", "sessions") }
