package herdrbridge

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// Landing is what a pane's screen says of a text just typed into the
// agent's composer.
type Landing int

const (
	// LandingUnknown: the screen cannot tell (no composer the kind can
	// read, or one whose rows could be an earlier state too). The engine
	// keeps the fixed pause (BridgeConfig.EnterDelay) before Enter.
	LandingUnknown Landing = iota
	// LandingPending: the composer shows none or only part of the text:
	// the CLI is still taking the paste in, and an Enter now could join it
	// as a newline.
	LandingPending
	// LandingDone: the composer shows the whole text: Enter now submits
	// it.
	LandingDone
	// LandingShell: the composer is in its shell mode ("!"): Enter would
	// run the text as a command. A person's "!" a moment before the
	// paste, read as an empty box just before, did so with the real
	// Claude Code (recorded: the reply held "command not found").
	LandingShell
)

// ErrShellMode means the composer was in its shell mode when a typed
// text was about to be submitted: Enter was not pressed.
var ErrShellMode = errors.New("the composer is in shell mode: Enter would run the text as a command")

// String names the state, for logs and test messages.
func (l Landing) String() string {
	switch l {
	case LandingPending:
		return "pending"
	case LandingDone:
		return "done"
	case LandingShell:
		return "shell"
	}
	return "unknown"
}

// Lander is a Kind whose screen shows when a typed text has landed in its
// composer. The engine presses Enter as soon as it does, instead of after
// the fixed pause a paste needs on a screen nobody can read; a kind that
// is not a Lander keeps agent.prompt (herdr's own pause) or the pause.
type Lander interface {
	// Landed reads a pane's visible screen for text, typed into an empty
	// composer by the plan that shows it (Plan.Shows).
	Landed(screen, text string) Landing
}

// Landed reads Claude Code's prompt box (LandedInComposer).
func (Claude) Landed(screen, text string) Landing { return LandedInComposer(screen, text) }

// LandTimeout bounds the wait for a composer that shows none or part of a
// typed text: then Enter is pressed anyway, and the turn is settled as
// any other (resolve presses Enter once more if the box still holds it).
const LandTimeout = 3 * time.Second

// landPoll is how often the screen is read while a text lands: measured
// with Claude Code 2.1.328 a paste shows 10–460 ms after it arrives, most
// often within 50 ms.
const landPoll = 10 * time.Millisecond

// LandedInComposer reads Claude Code's prompt box for text. The box draws a
// paste only once it has taken all of it in: until then it shows what it
// held before (fleetd types into an empty box), so the whole text in the
// box is the sign that Enter now submits it rather than joining the paste
// (measured with 2.1.328, docs/claude-composer.md). Rows are compared
// without white space, since the box wraps long rows; every state before
// the last paste lands holds a prefix of text (a plan pastes in order,
// and no text ends in white space), never the whole. A text taller than
// the box's window shows only its last rows, under a "↑ N more" rule:
// they are the sign only when they occur nowhere else in text, so the
// tail of an earlier prefix cannot pass for them. Bash mode, a dialog, a
// menu below the box (a command): LandingUnknown.
func LandedInComposer(screen, text string) Landing {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	bottom := -1
	footer := 0
	for i := len(rows) - 1; i >= 0 && bottom < 0; i-- {
		switch {
		case isRule(rows[i]):
			bottom = i
		case strings.TrimSpace(rows[i]) != "":
			footer++
		}
		if footer > maxFooterRows {
			return LandingUnknown
		}
	}
	top, windowed := -1, false
	for i := bottom - 1; i >= 0 && top < 0; i-- {
		switch {
		case isRule(rows[i]):
			top = i
		case isMoreRule(rows[i], "↑"):
			top, windowed = i, true
		}
	}
	if top < 0 || top >= bottom-1 {
		return LandingUnknown
	}
	want := squash(text)
	if !windowed {
		if strings.HasPrefix(rows[top+1], "!") {
			return LandingShell
		}
		first, ok := strings.CutPrefix(rows[top+1], "❯")
		if !ok {
			return LandingUnknown
		}
		shown := squash(first + strings.Join(rows[top+2:bottom], ""))
		switch {
		case shown == want:
			return LandingDone
		case strings.HasPrefix(want, shown):
			return LandingPending
		}
		return LandingUnknown
	}
	shown := squash(strings.Join(rows[top+1:bottom], ""))
	switch i := strings.Index(want, shown); {
	case shown == "" || i < 0:
		return LandingUnknown
	case i == len(want)-len(shown):
		return LandingDone
	case strings.HasSuffix(want, shown):
		return LandingUnknown // the tail occurs earlier too: it cannot tell
	}
	return LandingPending
}

// isMoreRule reports whether a row is one of the box's rules saying rows
// of its text are scrolled out of view past it: "─── ↑ 7 more ───…".
func isMoreRule(row, arrow string) bool {
	before, after, ok := strings.Cut(strings.TrimSpace(row), " "+arrow+" ")
	if !ok || !isRule(before+strings.Repeat("─", 8)) {
		return false
	}
	n, rest, ok := strings.Cut(after, " more ")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return false
	}
	return isRule(rest + strings.Repeat("─", 8))
}

// squash is s without its white space.
func squash(s string) string { return strings.Join(strings.Fields(s), "") }

// awaitLanding waits, after text was typed into pane, until it is safe to
// press Enter: the kind's screen shows the text landed; or, while it
// cannot tell, the fixed pause has passed since the typing; or, while the
// composer shows none or part of it, LandTimeout has (EnterAfter decides;
// the EnterWait metric records which). ErrShellMode when the composer is
// in its shell mode, else ctx ending is its only error.
func (b *Bridge) awaitLanding(ctx context.Context, pane string, l Lander, text string) error {
	start := b.cfg.Now()
	for {
		state := LandingUnknown
		if r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible}); err == nil {
			state = l.Landed(r.Text, text)
		}
		waited := b.cfg.Now().Sub(start)
		switch v := EnterAfter(state, waited, b.cfg.EnterDelay); v {
		case EnterNotYet:
		case EnterShell:
			b.cfg.Metrics.observeLanding(waited, v)
			return ErrShellMode
		default:
			b.cfg.Metrics.observeLanding(waited, v)
			return nil
		}
		if !sleep(ctx, landPoll) {
			return ctx.Err()
		}
	}
}
