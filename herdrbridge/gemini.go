package herdrbridge

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fleetd/fleetd/roles"
)

func init() { kinds[roles.KindGemini] = Gemini{} }

// Gemini is the room of Google's Gemini CLI (0.61.0,
// docs/gemini-composer.md). Its composer is a " > " row (continuation
// rows indented three spaces; " ! " in shell mode) below a rule of "─"
// (or, in a true-colour terminal, a frame of "▄" and "▀" rows) and the
// approval-mode hint, with the workspace footer below; the empty
// composer shows a greyed placeholder. A turn at work shows "(esc to
// cancel, Ns)" in the status row above the rule. Its session (and its
// SessionStart hook) starts with the CLI, so readiness comes from the
// hooks, as Claude Code's does.
type Gemini struct{}

// Name is "gemini".
func (Gemini) Name() string { return roles.KindGemini }

// geminiPlaceholders are what Gemini's empty composer shows in its row:
// in prompt mode and in shell mode.
var geminiPlaceholders = []string{"Type your message or @path/to/file", "Type your shell command"}

// geminiRuleAbove is how many rows above the prompt row the composer's
// rule may be: the rule, the approval-mode (or shell-mode) hint, a blank
// row and the true-colour frame's top.
const geminiRuleAbove = 5

// ParseComposer finds Gemini's composer: the last " > " (or " ! ") row
// with a rule of "─" or a frame of "▄" at most geminiRuleAbove rows above
// it, so that a past prompt in the conversation (" > hello", the reply
// below it) never reads as the composer, nor one a dialog covers (its
// "│" rows below). The text is the row's and its continuation rows'; the
// placeholder is no text. A command or file popup below the composer
// leaves it visible, with the text that opened it.
func (Gemini) ParseComposer(screen string) Composer {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	for i := range rows {
		rows[i] = strings.TrimRightFunc(rows[i], unicode.IsSpace)
	}
	start := -1
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-60; i-- {
		if geminiPromptRow(rows[i]) {
			start = i
			break
		}
	}
	if start < 0 || !geminiRuleNear(rows, start) || geminiBusy(rows[:start]) {
		// While Gemini still finishes a turn (its AfterAgent hook runs
		// after the reply is drawn and fleetd's hook reports the agent
		// idle before it exits), the composer takes a paste but drops
		// the Enter: not a composer to type into yet.
		return Composer{}
	}
	text := []string{strings.TrimLeft(rows[start][2:], " ")}
	end := start + 1
	for ; end < len(rows) && (rows[end] == "" || strings.HasPrefix(rows[end], "   ")); end++ {
		text = append(text, strings.TrimPrefix(rows[end], "   "))
	}
	for _, r := range rows[end:] {
		if strings.HasPrefix(strings.TrimSpace(r), "│") || strings.HasPrefix(strings.TrimSpace(r), "╭") {
			return Composer{} // a dialog's box below: it has the keys
		}
	}
	c := Composer{Visible: true, Bash: rows[start][1] == '!'}
	c.Text = strings.TrimSpace(strings.Join(text, "\n"))
	for _, p := range geminiPlaceholders {
		if c.Text == p {
			c.Text = ""
		}
	}
	return c
}

// geminiPromptRow reports whether a row starts the composer (or a past
// prompt): one space, ">" or "!", then a space or nothing.
func geminiPromptRow(r string) bool {
	return len(r) >= 2 && r[0] == ' ' && (r[1] == '>' || r[1] == '!') && (len(r) == 2 || r[2] == ' ')
}

// geminiRuleNear reports whether the composer's rule (or frame) is just
// above row i.
func geminiRuleNear(rows []string, i int) bool {
	for j := i - 1; j >= 0 && j >= i-geminiRuleAbove; j-- {
		r := strings.TrimSpace(rows[j])
		if r != "" && (strings.Trim(r, "─") == "" || strings.Trim(r, "▄") == "") {
			return true
		}
	}
	return false
}

// Working reports a turn (or one of its hooks) at work: "(esc to
// cancel, Ns)" or "Executing Hook" in the status row above the composer.
func (Gemini) Working(screen string) bool {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-60; i-- {
		if geminiPromptRow(strings.TrimRightFunc(rows[i], unicode.IsSpace)) {
			return geminiBusy(rows[:i])
		}
	}
	return geminiBusy(rows)
}

// geminiBusy reports whether the status row, the last non-blank row above
// the composer's rule (rows end at the prompt row), shows Gemini at
// work: a turn's "(esc to cancel, Ns)", or "Executing Hook(s): <names>",
// which Gemini shows from each hook's start for at least 3 s. A paste and
// an Enter 300 ms later while it finishes a turn or starts a session
// (drawing the reply, running the AfterAgent or SessionStart hook) left
// the text in the composer: Gemini reads an Enter within 40 ms of a paste
// (as it sees time, with its render behind) as a newline. fleetd types
// only once the turn's "(esc to cancel" is gone and the row names no
// hook but fleetd's own turn hooks (geminiTurnHooksLinger): waiting out
// the whole 3 s held every Gemini turn after another that long.
func geminiBusy(rows []string) bool {
	status := ""
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-10; i-- {
		r := strings.TrimSpace(rows[i])
		if r != "" && strings.Trim(r, "─") == "" {
			for j := i - 1; j >= 0 && j >= i-3; j-- {
				if status = strings.TrimSpace(rows[j]); status != "" {
					break
				}
			}
			break
		}
	}
	if status == "" && len(rows) > 0 {
		status = rows[len(rows)-1] // no rule: the row above the composer
	}
	status = strings.ToLower(status)
	if strings.Contains(status, "(esc to cancel") {
		return true
	}
	return strings.Contains(status, "executing hook") && !geminiTurnHooksLinger(status)
}

// geminiTurnHooks are the hooks fleetd runs at a turn's start and end
// (BeforeAgent, AfterAgent), as Gemini names them in its status row.
var geminiTurnHooks = []string{"fleetd-user-prompt-submit", "fleetd-stop"}

// geminiTurnHooksLinger reports a status row (lower case) that names only
// fleetd's own turn hooks, with no turn at work ("(esc to cancel" gone):
// Gemini keeps a hook's name up 3 s from its start whatever it does, and
// fleetd's hooks end in milliseconds, so the row outlives them and the
// turn. (A session's hooks, after a /clear, still hold: a prompt pasted
// under them was lost whole.)
func geminiTurnHooksLinger(status string) bool {
	_, names, ok := strings.Cut(status, ":")
	if !ok {
		return false
	}
	if i := strings.Index(names, "  "); i >= 0 {
		names = names[:i] // the hints at the row's right
	}
	list := strings.Split(names, ",")
	for i, n := range list {
		n = strings.TrimSpace(n)
		if j := strings.Index(n, " ("); j >= 0 {
			n = n[:j] // "(1/2)"
		}
		if slices.Contains(geminiTurnHooks, n) {
			continue
		}
		// Turns in quick succession pile their hooks' names up past the
		// row's end, which cuts the last one short.
		if i == len(list)-1 && n != "" && slices.ContainsFunc(geminiTurnHooks, func(h string) bool { return strings.HasPrefix(h, n) }) {
			continue
		}
		return false
	}
	return true
}

// EnterAgainAfter: a second after the typing. Measured with 0.61.0 on a
// loaded two-core machine (docs/gemini-composer.md): Gemini may drop
// the Enter 300 ms after a paste (a fresh one's first prompt most
// often); its composer then holds the whole text, idle, from +300 ms
// until another Enter, which submits it once. A taken Enter had emptied
// the composer by +300 ms there.
func (Gemini) EnterAgainAfter() time.Duration { return time.Second }

// Unsubmitted reports Gemini's composer holding text (rows compared
// without white space, as the composer wraps long rows and a dropped
// Enter taken as a newline adds an empty row) with no turn or hook at
// work. Submitting empties the composer before anything else, and an
// Enter on an empty composer does nothing (0.61.0's input.submit needs
// text in the buffer), so this screen never follows a submission. A
// paste Gemini shows as "[Pasted Text: N chars]" is not the text: never
// unsubmitted here (its Enter waits for SubmitTimeout).
func (g Gemini) Unsubmitted(screen, text string) bool {
	c := g.ParseComposer(screen)
	return c.Visible && !c.Bash && c.Text != "" && squash(c.Text) == squash(text) && !g.Working(screen)
}

// GeminiLimits bound a typed text for Gemini: one paste of at most 16 KiB.
// Gemini shows a paste of more than 500 characters or 5 lines as a
// "[Pasted Text: N chars]" placeholder and sends the whole text on
// submit (measured up to 6,000 characters and 40 lines); longer goes as a
// file, which a paste cannot make slower to draw.
var GeminiLimits = Limits{PieceUnits: 16 << 10, PieceNewlines: 1 << 20, MaxPieces: 1, MaxPasteBytes: 16 << 10}

// PlanText types a text as one paste when Gemini keeps it as it is, else
// it goes as a file. Measured with 0.61.0 (docs/gemini-composer.md): a
// pasted "!", "?" or "!cmd" is text (only a typed "!" switches to shell
// mode); a leading "/" is a command (a bare "/" and Enter ran /clear, the
// first entry of its popup); any "@" is a file mention that attaches the
// file and rewrites its path ("a@README.md" reached the model as
// "a @README.md"), or opens a completion popup that takes the Enter;
// leading and trailing white space is trimmed; Enter after a trailing
// "\" is a newline. fleetd types none of these, nor line separators or
// invisible characters it has not measured.
func (Gemini) PlanText(text string, l Limits) Plan {
	if why := geminiMustGoAsFile(text); why != "" {
		return Plan{Delivery: DeliveryFile, Why: why}
	}
	if len(text) > GeminiLimits.MaxPasteBytes {
		return Plan{Delivery: DeliveryFile, Why: fmt.Sprintf("it is longer than %d bytes", GeminiLimits.MaxPasteBytes)}
	}
	return Plan{Delivery: DeliveryPaste, Pieces: []string{text}}
}

func geminiMustGoAsFile(text string) string {
	if strings.HasPrefix(strings.TrimLeftFunc(text, isJSSpace), "/") {
		return `it starts with "/", which Gemini runs as a command`
	}
	if strings.Contains(text, "@") {
		return `it contains "@", which Gemini reads as a file to attach (rewriting its path) or completes on Enter`
	}
	first, _ := utf8.DecodeRuneInString(text)
	last, _ := utf8.DecodeLastRuneInString(text)
	switch {
	case isJSSpace(first) || isJSSpace(last):
		return "it starts or ends in white space, which Gemini trims"
	case last == '\\':
		return `it ends in "\", after which Enter makes a newline`
	}
	for _, r := range text {
		switch {
		case r == '\u2028' || r == '\u2029':
			return "it contains Unicode line separators"
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("it contains the invisible character %U", r)
		}
	}
	return ""
}

// PlanCommand is the command, pasted, then Enter.
func (Gemini) PlanCommand(command string) Plan { return PlanCommand(command) }

// HandOver names the file by its path, without an "@": Gemini would
// rewrite an "@" mention's path in the prompt, and attaches nothing that
// git ignores (the inbox is), so the model reads it with its read_file
// tool (fleetd's settings let its tools read git-ignored files).
func (Gemini) HandOver(path string, size int, why string) string {
	return fmt.Sprintf("Your prompt for this turn is the whole content of the file %s (%d bytes; it came as a file because %s). Read all of it and act on it as if it had been typed here.", path, size, why)
}

// ClearKeys: Esc twice clears a draft. Not Ctrl-C: Gemini counts every
// Ctrl-C, and a second one within 3 s quits it, even when the first only
// cleared the composer.
func (Gemini) ClearKeys() []string { return []string{"escape", "escape"} }

// CloseKeys: Esc closes a popup and leaves shell mode.
func (Gemini) CloseKeys() []string { return []string{"escape"} }

// LazySession: Gemini fires SessionStart as it starts, about a second
// after its composer is drawn.
func (Gemini) LazySession() bool { return false }

// LaunchEnv gives the agent its own GEMINI_CLI_HOME in fleetd's state dir
// (Gemini reads ~/.gemini there instead of the user's) and trusts its
// working directory: in an untrusted folder Gemini asks first, and runs
// no hooks at all once told not to trust it.
func (Gemini) LaunchEnv(stateDir, agent string) map[string]string {
	if stateDir == "" {
		return nil
	}
	// CI and GITHUB_ACTIONS "true" make Gemini CLI 0.61.0 headless
	// (isHeadlessMode): it answers stdin and exits, ending its session
	// seconds after launch. A fleet agent is interactive wherever fleetd
	// runs, a CI job included.
	return map[string]string{"GEMINI_CLI_HOME": geminiHome(stateDir, agent), "GEMINI_CLI_TRUST_WORKSPACE": "true",
		"CI": "false", "GITHUB_ACTIONS": "false"}
}

// Install writes the agent's settings under its GEMINI_CLI_HOME
// (writeGeminiHome).
func (Gemini) Install(in Install) error {
	if in.StateDir == "" {
		return fmt.Errorf("gemini: %w for the agent's GEMINI_CLI_HOME", ErrNoStateDir)
	}
	return writeGeminiHome(geminiHome(in.StateDir, in.Agent), in.Role, in.HookCommand, in.MCP)
}

func geminiHome(stateDir, agent string) string { return filepath.Join(stateDir, "gemini", agent) }
