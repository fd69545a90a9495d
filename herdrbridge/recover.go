package herdrbridge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// AttentionScreen is the attention reason of an agent whose screen fleetd
// could not bring back to an empty prompt box after a turn it typed was
// not taken: a menu, dialog or draft that Escape does not close.
const AttentionScreen = "screen_not_recovered"

// Recovery bounds: each round reads the screen and presses Escape once
// (twice, escPause apart, to clear a draft), then waits recoverPause for
// the agent to redraw.
const (
	maxRecoverRounds = 5
	escPause         = 150 * time.Millisecond
	recoverPause     = 400 * time.Millisecond
)

// recovery is what recoverComposer saw and did.
type recovery struct {
	// saw describes the screen before any key: "a dialog or menu (…)",
	// "a draft in the prompt box (…)", "the prompt box in bash mode".
	saw string
	// escapes counts the Escape keys pressed.
	escapes int
	// ok: the prompt box is on screen and empty now.
	ok bool
	// why says, when not ok, what stopped it.
	why string
}

// String says it in a sentence for a turn's failure or an attention.
func (r recovery) String() string {
	switch {
	case r.ok && r.escapes == 0:
		return "the prompt box is empty"
	case r.ok:
		return fmt.Sprintf("the screen showed %s; fleetd pressed Escape %s and the prompt box is empty again", r.saw, times(r.escapes))
	case r.escapes > 0:
		return fmt.Sprintf("the screen showed %s; after Escape %s, %s", r.saw, times(r.escapes), r.why)
	}
	return fmt.Sprintf("the screen showed %s; %s", r.saw, r.why)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// recoverComposer brings an agent's prompt box back after a turn fleetd
// typed was not taken, so the next turn is not wedged behind what the
// typing left on screen: a command menu or dialog a text opened, an
// overlay, a draft that was never submitted, bash mode. It presses only
// Escape — which closes Claude Code's menus, dialogs and overlays, and,
// pressed twice, clears a draft — and reads the screen after each round
// until the box is on screen and empty. It never presses a key while the
// agent works (herdr or the screen says so: Escape would interrupt it)
// or shows a permission prompt (Escape would answer it), and it never
// presses Escape on an empty box (twice there opens the rewind selector).
func (b *Bridge) recoverComposer(ctx context.Context, agent, pane string, k Kind) recovery {
	var r recovery
	for round := 0; ; round++ {
		screen, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			r.why = "the screen could not be read: " + err.Error()
			return r
		}
		c := k.ParseComposer(screen.Text)
		if r.saw == "" {
			r.saw = describeScreen(c, screen.Text)
		}
		switch {
		case c.Empty():
			r.ok = true
			return r
		case b.busy(agent) || k.Working(screen.Text):
			r.why = "the agent is working: nothing is pressed"
			return r
		case round == maxRecoverRounds:
			r.why = "the screen still shows " + describeScreen(c, screen.Text)
			return r
		}
		keys := k.CloseKeys()
		if c.Visible && c.Text != "" {
			keys = k.ClearKeys()
		}
		for i, key := range keys {
			if i > 0 && !sleep(ctx, escPause) {
				r.why = ctx.Err().Error()
				return r
			}
			if err := b.client.SendKeys(ctx, pane, key); err != nil {
				r.why = "herdr refused " + key + ": " + err.Error()
				return r
			}
			if key == "escape" {
				r.escapes++
			}
		}
		if !sleep(ctx, recoverPause) {
			r.why = ctx.Err().Error()
			return r
		}
	}
}

// busy reports whether herdr's present view of the agent is working or
// blocked (a permission prompt): no key may be pressed then.
func (b *Bridge) busy(agent string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	return a != nil && a.fresh && a.label != "" && (a.status == herdrapi.StatusWorking || a.status == herdrapi.StatusBlocked)
}

// describeScreen says what covers or fills the prompt box, for a person.
func describeScreen(c Composer, screen string) string {
	switch {
	case c.Visible && c.Bash && c.Text == "":
		return "the prompt box in bash mode"
	case c.Visible && c.Text != "":
		return fmt.Sprintf("a draft in the prompt box (%s)", clip(c.Text, 80))
	case c.Visible:
		return "the empty prompt box"
	}
	return fmt.Sprintf("no prompt box but a menu, dialog or overlay (%s)", clip(lastRows(screen, 3), 160))
}

// screenWorking reports whether the bottom of the screen shows Claude
// Code working: "esc to interrupt" in its footer (2.1.328 keeps the box on
// screen, empty, while a turn runs) or in the status row above the box.
func screenWorking(screen string) bool {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	seen := 0
	for i := len(rows) - 1; i >= 0 && seen < 8; i-- {
		if strings.TrimSpace(rows[i]) == "" {
			continue
		}
		seen++
		if strings.Contains(strings.ToLower(rows[i]), "esc to interrupt") {
			return true
		}
	}
	return false
}
