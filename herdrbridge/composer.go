package herdrbridge

import (
	"strings"
	"unicode"
)

// Composer is what a pane's screen shows of Claude Code's prompt box: the
// sure sign that the agent is ready for a paste. Claude Code turns on
// bracketed paste before it first draws the box (measured with 2.1.328:
// ESC[?2004h comes first), so a visible box means a multi-line paste stays
// one paste; and it means no dialog or overlay covers the composer.
type Composer struct {
	// Visible: the box is on screen: a "❯" row between two rules, at the
	// bottom of the screen (only its footer below).
	Visible bool
	// Text is what the box holds ("" when empty), rows joined by "\n".
	Text string
	// Bash: the box is in bash mode (prompt character "!").
	Bash bool
}

// Empty reports whether the box is visible and holds nothing: the pane
// can take a prompt.
func (c Composer) Empty() bool { return c.Visible && c.Text == "" && !c.Bash }

// maxFooterRows is how many rows may follow the box's bottom rule (Claude
// Code's mode line and hints).
const maxFooterRows = 4

// ParseComposer finds Claude Code's prompt box in a pane's visible text.
// The box is the last pair of horizontal rules whose first row inside
// starts with the prompt character "❯" (or "!" in bash mode), followed by
// at most a short footer. Rows above it are the conversation, which may
// hold old "❯" rows of past prompts; they do not count.
func ParseComposer(screen string) Composer {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	// The bottom rule: the last rule with at most maxFooterRows non-blank
	// rows below it.
	bottom := -1
	footer := 0
	for i := len(rows) - 1; i >= 0; i-- {
		if isRule(rows[i]) {
			bottom = i
			break
		}
		if strings.TrimSpace(rows[i]) != "" {
			footer++
		}
		if footer > maxFooterRows {
			return Composer{}
		}
	}
	if bottom < 1 {
		return Composer{}
	}
	top := -1
	for i := bottom - 1; i >= 0; i-- {
		if isRule(rows[i]) {
			top = i
			break
		}
	}
	if top < 0 || top == bottom-1 {
		return Composer{}
	}
	inside := rows[top+1 : bottom]
	first := inside[0]
	var c Composer
	switch {
	case strings.HasPrefix(first, "❯"):
		first = strings.TrimPrefix(first, "❯")
	case strings.HasPrefix(first, "!"):
		first, c.Bash = strings.TrimPrefix(first, "!"), true
	default:
		return Composer{}
	}
	c.Visible = true
	lines := []string{trimSpaceNBSP(first)}
	for _, r := range inside[1:] {
		lines = append(lines, trimSpaceNBSP(r))
	}
	c.Text = strings.TrimSpace(strings.Join(lines, "\n"))
	return c
}

// isRule reports whether a row is a horizontal rule: box-drawing
// horizontals only, and long enough not to be text.
func isRule(row string) bool {
	row = strings.TrimSpace(row)
	if len([]rune(row)) < 8 {
		return false
	}
	for _, r := range row {
		if r != '─' && r != '━' {
			return false
		}
	}
	return true
}

// trimSpaceNBSP trims whitespace including the no-break space Claude Code
// puts after its prompt character.
func trimSpaceNBSP(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\u00a0' })
}
