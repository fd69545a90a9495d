package herdrbridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/lifecycle"
)

// dialogAgent takes its first prompt and opens a dialog instead of
// running it, as Claude Code does with a bare "/" (its command menu's
// first entry, /add-dir): no prompt box, only the dialog, until Esc
// closes it. Then it answers each line as quickAgent does.
const dialogAgent = box + `printf '\033]0;claude\007'; box
IFS= read -r line || exit 0
echo "GOT: $line"
printf '▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔▔\n  Add directory to workspace\n\n  Directory path\n  ../other-project\n\n  Enter to add · Esc to cancel\n'
stty -icanon -echo min 1 time 0
while :; do c=$(dd bs=1 count=1 2>/dev/null | od -An -c | tr -d ' '); [ "$c" = '033' ] && break; done
stty icanon echo
echo "  Did not add a working directory."
while :; do
  printf '\033]0;claude\007'; box
  IFS= read -r line || exit 0
  printf '\033]0;⠙ working\007'; sleep 0.3
  printf 'ANSWER: %s\n' "$line"
done`

// A typed turn that opens a dialog instead of being submitted does not
// wedge the agent: once its window passes with no proof, fleetd closes
// the dialog with Escape (the screen read proves the prompt box is empty
// again), fails the turn saying what it saw and did, and the next turn is
// typed and taken.
func TestATurnThatLeftADialogOpenIsFailedAndTheNextOneIsTyped(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", dialogAgent)
	f.start(func(c *herdrbridge.BridgeConfig) { c.SubmitTimeout = 500 * time.Millisecond })

	first := f.queue("w-1", "opens a dialog", time.Time{})
	second := f.queue("w-1", "after the dialog", time.Time{})
	got := f.waitTurn(first, lifecycle.StateFailed)
	if got.Reason != events.ReasonIndeterminate || !strings.Contains(got.Message, "pressed Escape once and the prompt box is empty again") ||
		!strings.Contains(got.Message, "Enter to add · Esc to cancel") {
		t.Errorf("first turn failed %q: %q; want indeterminate, saying the dialog it saw was closed", got.Reason, got.Message)
	}
	f.waitOutput(p.ID, "Did not add a working directory.")
	f.waitTurn(second, lifecycle.StateSubmitted)
	f.waitOutput(p.ID, "ANSWER: after the dialog")
	if n := f.typedCount(p.ID, "opens a dialog"); n != 1 {
		t.Errorf("the first turn was written %d times, want once", n)
	}
	for _, ev := range f.history("w-1") {
		if d, ok := ev.Data.(events.AgentAttention); ok && d.Reason != "" {
			t.Errorf("attention %+v: the screen was brought back, nobody needs to look", d)
		}
	}
}
