package herdrbridge

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fleetd/fleetd/roles"
)

// OpenCode is the room of OpenCode (1.18.33, docs/opencode-composer.md),
// a full-screen TUI. Its prompt box is a column of rows with a "┃" left
// border: a padding row, the text rows ("┃  text"), a padding row, the
// footer ("┃  Build · <model> <provider>", "┃  Shell" in shell mode), and
// a bottom edge "╹▀▀▀…" as wide as the box. A new session shows it
// centred under the logo, holding a greyed placeholder ("Ask anything…
// "…""); a session shows it at the bottom, a sidebar to its right. A turn
// at work shows "esc interrupt" in the row below it. OpenCode has no
// command hooks: fleetd's plugin, in the agent's own config directory
// (writeOpenCodeHome), runs fleetd's hooks from OpenCode's chat.message
// and session idle events.
type OpenCode struct{}

func init() { kinds[roles.KindOpenCode] = OpenCode{} }

// Name is "opencode".
func (OpenCode) Name() string { return roles.KindOpenCode }

// openCodeDialog matches a dialog's title row ("Select agent … esc"):
// a dialog (the command palette, a picker, a permission question) covers
// the screen above the prompt box, which stays drawn and empty beneath it.
func openCodeDialog() *regexp.Regexp { return regexps().openCodeDialog }

// openCodePlaceholder is the greyed example an empty box shows in a new
// session (shell mode has its own).
func openCodePlaceholder() *regexp.Regexp { return regexps().openCodePlaceholder }

// ParseComposer finds OpenCode's prompt box: the last "╹▀" edge, the
// footer row above it, and the "┃" rows above that, up to the first row
// that is not the box's (a popup's entries share its border but sit one
// column closer to it: "┃ /new"). Text is cut at the box's right edge
// (the sidebar shares its rows). Not visible while a dialog is open.
func (OpenCode) ParseComposer(screen string) Composer {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	edge, col, width := -1, 0, 0
	for i := len(rows) - 1; i >= 1 && i >= len(rows)-60; i-- {
		t := strings.TrimLeft(rows[i], " ")
		if strings.HasPrefix(t, "╹▀") {
			edge, col = i, len(rows[i])-len(t) // leading spaces are one byte each
			width = utf8.RuneCountInString(strings.TrimRight(t, " "))
			break
		}
	}
	if edge < 0 {
		return Composer{}
	}
	for _, r := range rows {
		if openCodeDialog().MatchString(strings.TrimRight(r, " ")) {
			return Composer{}
		}
	}
	// cell is a box row's content right of the border, or ok false.
	cell := func(row string) (string, bool) {
		if len(row) <= col || strings.TrimLeft(row[:col], " ") != "" || !strings.HasPrefix(row[col:], "┃") {
			return "", false
		}
		r := []rune(row[col+len("┃"):])
		if len(r) > width-1 {
			r = r[:width-1]
		}
		return strings.TrimRight(string(r), " "), true
	}
	footer, ok := cell(rows[edge-1])
	footer = strings.TrimSpace(footer)
	if !ok || footer == "" {
		return Composer{}
	}
	var box []string // bottom up
	for i := edge - 2; i >= 0; i-- {
		c, ok := cell(rows[i])
		if !ok || c != "" && !strings.HasPrefix(c, "  ") {
			break
		}
		box = append(box, strings.TrimPrefix(c, "  "))
	}
	var text []string
	for i := len(box) - 1; i >= 0; i-- {
		text = append(text, box[i])
	}
	c := Composer{Visible: true, Bash: footer == "Shell" || strings.HasPrefix(footer, "Shell ")}
	c.Text = strings.Trim(strings.Join(text, "\n"), "\n")
	if openCodePlaceholder().MatchString(c.Text) {
		c.Text = ""
	}
	return c
}

// Working reports "esc interrupt" (after one Escape, "esc again to
// interrupt") in the rows at the bottom of the screen.
func (OpenCode) Working(screen string) bool {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	seen := 0
	for i := len(rows) - 1; i >= 0 && seen < 8; i-- {
		if strings.TrimSpace(rows[i]) == "" {
			continue
		}
		seen++
		if strings.Contains(rows[i], "esc interrupt") || strings.Contains(rows[i], "esc again to interrupt") {
			return true
		}
	}
	return false
}

// OpenCodeLimits bound a typed text for OpenCode: one paste of at most
// 3 KiB (a 3,096-byte paste of 24 lines was measured to arrive whole);
// longer goes as a file. fleetd turns the paste summary off in the
// agent's config, so a paste of three lines or more than 150 characters
// is not shown as "[Pasted ~N lines]", which OpenCode would send trimmed
// and with a space after it.
var OpenCodeLimits = Limits{PieceUnits: 3 << 10, PieceNewlines: 1 << 20, MaxPieces: 1, MaxPasteBytes: 3 << 10}

// openCodeAttachable are the file name endings a pasted path is attached
// by (an image, a PDF) or inlined by (an SVG) when the file exists.
var openCodeAttachable = []string{".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".pdf", ".svg"}

// PlanText types a text as one paste when OpenCode keeps it as it is,
// else it goes as a file. Measured with 1.18.33: a paste keeps a leading
// "!" as text (only the "!" key switches to shell mode), leading and
// trailing white space, tabs and a lone ESC; a leading "/" opens the
// command popup and a text that is a command's name runs it (a bare "/"
// ran the first entry, /agents); a word starting with "@" at the end
// keeps the file popup open, whose Enter picks an entry; a pasted path of
// an existing image, PDF or SVG is attached instead of typed.
func (OpenCode) PlanText(text string, l Limits) Plan {
	if why := openCodeMustGoAsFile(text); why != "" {
		return Plan{Delivery: DeliveryFile, Why: why}
	}
	if len(text) > OpenCodeLimits.MaxPasteBytes {
		return Plan{Delivery: DeliveryFile, Why: fmt.Sprintf("it is longer than %d bytes", OpenCodeLimits.MaxPasteBytes)}
	}
	return Plan{Delivery: DeliveryPaste, Pieces: []string{text}}
}

func openCodeMustGoAsFile(text string) string {
	lead := strings.TrimLeftFunc(text, isJSSpace)
	if strings.HasPrefix(lead, "/") {
		return `it starts with "/", which opens OpenCode's command popup (a command's name runs it)`
	}
	fields := strings.Fields(text)
	if len(fields) > 0 && strings.HasPrefix(fields[len(fields)-1], "@") && !unicode.IsSpace(lastRune(text)) {
		return `it ends in a word starting with "@", which keeps OpenCode's file popup open for the Enter`
	}
	if !strings.Contains(strings.TrimSpace(text), "\n") {
		low := strings.ToLower(strings.TrimSpace(text))
		for _, ext := range openCodeAttachable {
			if strings.HasSuffix(low, ext) {
				return "it may name an image, PDF or SVG file, which OpenCode attaches instead of typing the path"
			}
		}
	}
	for _, r := range text {
		switch {
		case r == '\u2028' || r == '\u2029':
			return "it contains Unicode line separators"
		case r == '\r':
			return "it contains carriage returns, which OpenCode's paste turns into newlines"
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("it contains the invisible character %U", r)
		}
	}
	return ""
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// PlanCommand is the command, pasted, then Enter: the popup's first entry
// is the command typed (measured with /new).
func (OpenCode) PlanCommand(command string) Plan { return PlanCommand(command) }

// HandOver names the file by its path: an "@" mention is only a file
// part when picked from the popup, so the model reads it with its own
// tools.
func (OpenCode) HandOver(path string, size int, why string) string {
	return fmt.Sprintf("Your prompt for this turn is the whole content of the file %s (%d bytes; it came as a file because %s). Read all of it and act on it as if it had been typed here.", path, size, why)
}

// ClearCommand is "/new": OpenCode's TUI leaves the session for its
// start screen, and creates the new session with the next prompt
// (measured with 1.18.33), so a fresh_context turn starts with no earlier
// context. Its plugin hears of the new session only when that prompt
// creates it, too late to say the clear took effect before the prompt is
// typed, so the engine reads it off the screen (Cleared).
func (OpenCode) ClearCommand() string { return "/new" }

// openCodeLogo is a row of the logo OpenCode draws above the box on its
// start screen, and on no session's screen.
const openCodeLogo = "█▀▀█ █▀▀█ █▀▀█ █▀▀▄"

// Cleared reports the start screen a /new leaves: the logo above an
// empty box. A session's screen (the conversation, the sidebar) has no
// logo, so a /new not yet run never reads as done.
func (k OpenCode) Cleared(screen string) bool {
	return strings.Contains(screen, openCodeLogo) && k.ParseComposer(screen).Empty()
}

// ClearKeys: Ctrl-C clears a draft (on an empty box it would quit, which
// recovery never presses).
func (OpenCode) ClearKeys() []string { return []string{"ctrl+c"} }

// CloseKeys: Esc closes a dialog or popup and leaves shell mode.
func (OpenCode) CloseKeys() []string { return []string{"escape"} }

// LazySession: OpenCode creates its session with the first prompt.
func (OpenCode) LazySession() bool { return true }

// LaunchEnv gives the agent its own config directory in fleetd's state
// dir (OpenCode loads it after the user's own), and keeps OpenCode from
// updating itself or fetching the model list at start.
func (OpenCode) LaunchEnv(stateDir, agent string) map[string]string {
	if stateDir == "" {
		return nil
	}
	return map[string]string{
		"OPENCODE_CONFIG_DIR":           openCodeDir(stateDir, agent),
		"OPENCODE_DISABLE_AUTOUPDATE":   "1",
		"OPENCODE_DISABLE_MODELS_FETCH": "1",
	}
}

// Install writes the agent's config directory (writeOpenCodeHome).
func (OpenCode) Install(in Install) error {
	if in.StateDir == "" {
		return fmt.Errorf("opencode: %w for the agent's config directory", ErrNoStateDir)
	}
	return writeOpenCodeHome(openCodeDir(in.StateDir, in.Agent), in.Role, in.HookCommand, in.MCP)
}

func openCodeDir(stateDir, agent string) string { return filepath.Join(stateDir, "opencode", agent) }
