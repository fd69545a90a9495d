package simagent

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// The screen is drawn as Claude Code draws it: what is done (the banner,
// past prompts, replies) scrolls above, and the prompt box (or the overlay
// covering it) is redrawn in place at the bottom. Only the box is redrawn,
// and only when it changed: the machines fleetd runs on are small, and a
// client reading the screen must cope with a box that moves, not a log.

// Box rows.
const (
	promptFooter = "  ⏵⏵ auto mode on (shift+tab to cycle)"
	bashFooter   = "  ! for shell mode"
	workingRow   = "✻ Working… (esc to interrupt)"
)

// screen draws the bottom of the terminal. Callers serialise its use.
type screen struct {
	out io.Writer
	// width is the terminal's width now, asked at every draw.
	width func() int
	// box is what the bottom shows, laid out for a width.
	box func(width int) []string

	shown  bool     // the box has been drawn and is kept on screen
	height int      // terminal rows the drawn box takes
	drawn  []string // the rows drawn, at drawnW
	drawnW int
}

// show draws the box for the first time; from now on it stays at the
// bottom.
func (s *screen) show() {
	s.shown = true
	s.refresh()
}

// refresh redraws the box if it changed.
func (s *screen) refresh() {
	if !s.shown {
		return
	}
	w := s.width()
	rows := s.box(w)
	if w == s.drawnW && slices.Equal(rows, s.drawn) {
		return
	}
	var b strings.Builder
	s.erase(&b)
	s.draw(&b, w, rows)
	_, _ = io.WriteString(s.out, b.String())
}

// above prints text above the box, as a line or more of their own.
func (s *screen) above(text string) {
	var b strings.Builder
	s.erase(&b)
	b.WriteString(strings.ReplaceAll(visible(strings.TrimSuffix(text, "\n")), "\n", "\r\n"))
	b.WriteString("\r\n")
	if s.shown {
		w := s.width()
		s.draw(&b, w, s.box(w))
	}
	_, _ = io.WriteString(s.out, b.String())
}

// raw writes sequences that do not move the cursor (modes, the title).
func (s *screen) raw(seq string) { _, _ = io.WriteString(s.out, seq) }

// erase takes the cursor back to the box's first row and clears from
// there to the end of the screen.
func (s *screen) erase(b *strings.Builder) {
	if s.height == 0 {
		return
	}
	b.WriteString("\r")
	if s.height > 1 {
		b.WriteString("\x1b[" + strconv.Itoa(s.height-1) + "A")
	}
	b.WriteString("\x1b[J")
	s.height, s.drawn = 0, nil
}

// draw writes rows from the cursor's row down, leaving the cursor at the
// end of the last one, and records how many terminal rows they took.
func (s *screen) draw(b *strings.Builder, w int, rows []string) {
	s.height = 0
	for i, r := range rows {
		if i > 0 {
			b.WriteString("\r\n")
		}
		r = visible(r)
		b.WriteString(r)
		s.height += max(1, (displayWidth(r)+w-1)/w)
	}
	s.drawn, s.drawnW = rows, w
}

// visible is s as it may be printed: escape sequences and control
// characters a prompt or a command's output may hold are dropped (they
// would move the cursor and break the box's layout), newlines kept, tabs
// made four spaces.
func visible(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r >= 0x7f && r < 0xa0 }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == 0x1b:
			n, complete := escapeLen([]byte(s[i:]))
			if !complete {
				return b.String()
			}
			i += n
		case c == '\t':
			b.WriteString("    ")
			i++
		case c < 0x20 && c != '\n' || c == 0x7f:
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r < 0x80 || r >= 0xa0 {
				b.WriteString(s[i : i+n])
			}
			i += n
		}
	}
	return b.String()
}

// displayWidth is how many columns s takes: wide East Asian characters
// two, combining marks and format characters none.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		case r < 0x20 || r == 0x7f:
		default:
			switch width.LookupRune(r).Kind() {
			case width.EastAsianWide, width.EastAsianFullwidth:
				n += 2
			default:
				n++
			}
		}
	}
	return n
}

// rows lays the composer out: the overlay when one is open, else the
// prompt box — a rule, "❯" (or "!" in bash mode) and a no-break space
// before the text, continuation lines indented two spaces, a rule, and the
// mode's footer.
func (c *composer) rows(w int) []string {
	rule := strings.Repeat("─", w)
	switch c.overlay {
	case overlayShortcuts:
		return []string{rule,
			"  ! for bash mode       double tap esc to clear input      ctrl + _ to undo",
			"  / for commands        shift + tab to auto-accept edits   ctrl + z to suspend",
			"  @ for file paths      ctrl + o for verbose output        ctrl + v to paste images",
			"  & for background      ctrl + t to show todos             \\⏎ for newline",
			"",
			"  Esc to close"}
	case overlayHelp:
		return []string{rule,
			" Claude Code v2.1.328 (fleetd sim-agent)",
			"",
			" Commands",
			"   /clear     Clear conversation history and free up context",
			"   /compact   Clear conversation history but keep a summary in context",
			"   /exit      Exit the REPL",
			"   /help      Show help and available commands",
			"",
			" Esc to close"}
	case overlayAddDir:
		return []string{"▔" + strings.Repeat("▔", w-1),
			"  Add directory to workspace",
			"",
			"  Directory path",
			"  ../other-project",
			"",
			"  Enter to add · Esc to cancel"}
	case overlayRewind:
		return []string{rule,
			"  Rewind",
			"",
			"  Restore the code and/or conversation to the point before…",
			"  ❯ (current)",
			"",
			"  Enter to continue · Esc to cancel"}
	case overlayPermission:
		// Laid out as Claude Code 2.1.328's Bash dialog is (its screens
		// are herdrbridge/testdata/claude/dialog-*.txt): the tool, the
		// command's description, the command between dashed rules, the
		// question, the options, the footer.
		dashed := strings.Repeat("╌", w)
		return []string{rule,
			" Bash command",
			" run the simulated tool",
			dashed,
			" simulated-tool --needs-permission",
			dashed,
			" Do you want to proceed?",
			" ❯ 1. Yes",
			"   2. Yes, and don't ask again for simulated-tool commands in this project",
			"   3. No",
			"",
			" Esc to cancel · Tab to amend"}
	}
	char, footer := "❯", promptFooter
	if c.bash {
		char, footer = "!", bashFooter
	}
	lines := strings.Split(string(c.text), "\n")
	rows := []string{rule, char + "\u00a0" + lines[0]}
	for _, l := range lines[1:] {
		rows = append(rows, "  "+l)
	}
	if hidden := len(rows) - 1 - maxBoxRows; hidden > 0 {
		// A tall text shows its last rows under a rule that counts the
		// rest, as Claude Code's box does ("─── ↑ 7 more ───").
		more := fmt.Sprintf("─── ↑ %d more ", hidden)
		rows = append([]string{more + strings.Repeat("─", max(3, w-len([]rune(more))))}, rows[1+hidden:]...)
	}
	return append(rows, rule, footer)
}

// maxBoxRows is how many rows of text the box shows; Claude Code 2.1.328
// showed 20 on a screen of 50 rows, the fake herdr's panes have 24.
const maxBoxRows = 8
