package herdrbridge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/lifecycle"
)

// gemScreen draws Gemini CLI 0.61.0's screen as herdr shows it (a rule,
// the " > " composer row holding $2, the workspace footer; $1 a row of
// conversation above), the cursor left in the composer after " > " so
// the terminal's echo of a typed line lands there as Gemini draws a
// paste. No spinner in the title: herdr never sees these stand-ins
// work, so only the hooks (the test's events) prove a submission.
const gemScreen = `gm() { printf '\033[2J\033[H%s\n────────────────────\n > %s\n workspace (/directory)\n\033[3;4H' "$1" "$2"; }
`

// gemDropsFirstEnter stands in for a freshly started Gemini that drops
// the Enter after its first paste: the composer keeps the whole text,
// idle, until another Enter submits it (measured, docs/gemini-composer.md).
const gemDropsFirstEnter = gemScreen + `gm "" ""
IFS= read -r line || exit 0
gm "" "$line"
IFS= read -r more || exit 0
gm "SUBMITTED: $line$more" ""
while IFS= read -r line; do gm "SUBMITTED: $line" ""; done`

// gemTakesEnter submits at the first Enter, its composer empty again at
// once; its BeforeAgent hook is late.
const gemTakesEnter = gemScreen + `gm "" ""
while IFS= read -r line; do gm "SUBMITTED: $line" ""; done`

// startGemini starts script as a Gemini agent (a role of kind gemini)
// and a bridge whose SubmitTimeout (a minute) is far beyond the test:
// any extra Enter is the early one.
func startGemini(f *fleet, script string) herdrtest.Pane {
	f.t.Helper()
	p := herdrapitest.Spawn(f.t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(script)})
	herdrapitest.StatusIs(f.t, f.client, p.ID, herdrapi.StatusIdle, herdrapi.StatusDone)
	herdrapitest.ReadContains(f.t, f.client, p.ID, "workspace")
	f.add("w-1", events.AgentRegistered{Agent: "w-1", Host: testHost, Pane: p.ID, Role: "w-gemini", Kind: "gemini", Origin: "adopted"}, "")
	f.start(func(c *herdrbridge.BridgeConfig) {
		c.Roles = mustRoles(f.t, `{"roles":{"w-gemini":{"kind":"gemini","env_class":"clean"}}}`)
		c.SubmitTimeout = time.Minute
	})
	return p
}

// enters counts the Enters written to pane after text was.
func (f *fleet) enters(pane, text string) (n int, last time.Time) {
	after := f.typedAt(pane, text)
	for _, w := range f.herdr.Input(pane) {
		if !w.At.Before(after) && string(w.Data) == "\r" {
			n, last = n+1, w.At
		}
	}
	return n, last
}

// A Gemini that dropped the Enter after the paste (its composer holding
// the whole text, idle, no hook) gets Enter once more about a second
// later, once, recorded first — not after the minute of SubmitTimeout —
// and the prompt is submitted once.
func TestADroppedEnterIsPressedOnceMoreEarlyForAKindThatDropsIt(t *testing.T) {
	f := newFleet(t)
	p := startGemini(f, gemDropsFirstEnter)
	one := f.queue("w-1", "hello gemini", time.Time{})
	f.waitOutput(p.ID, "SUBMITTED: hello gemini")
	f.add("w-1", events.AgentSubmitted{Via: "hook"}, one)
	f.waitTurn(one, lifecycle.StateSubmitted)

	n, last := f.enters(p.ID, "hello gemini")
	if n != 2 {
		t.Errorf("%d Enters after the text, want 2 (herdr's own, and one more)", n)
	}
	if d := last.Sub(f.typedAt(p.ID, "hello gemini")); d < time.Second || d > 5*time.Second {
		t.Errorf("Enter once more %v after the text, want about 1.5 s (two looks at the screen after a second)", d)
	}
	if got := f.count("w-1", func(ev events.Event) bool {
		d, ok := ev.Data.(events.AgentTyped)
		return ok && ev.CorrelationID == one && d.Enter == 1
	}); got != 1 {
		t.Errorf("%d AgentTyped{Enter:1} events, want 1", got)
	}
	if n := f.typedCount(p.ID, "hello gemini"); n != 1 {
		t.Errorf("text written %d times, want 1", n)
	}
	// The prompt was submitted once: the agent's second turn takes its
	// own Enter, and no third Enter follows it.
	f.add("w-1", events.AgentReplied{Reply: "done"}, one)
	f.waitTurn(one, lifecycle.StateReplied)
	two := f.queue("w-1", "second turn", time.Time{})
	f.waitOutput(p.ID, "SUBMITTED: second turn")
	time.Sleep(2500 * time.Millisecond)
	f.add("w-1", events.AgentSubmitted{Via: "hook"}, two)
	f.waitTurn(two, lifecycle.StateSubmitted)
	if n, _ := f.enters(p.ID, "second turn"); n != 1 {
		t.Errorf("%d Enters after the second turn's text, want 1: its composer was empty", n)
	}
	if n := strings.Count(string(f.herdr.Output(p.ID)), "SUBMITTED: hello gemini"); n != 1 {
		t.Errorf("the first prompt was submitted %d times, want once", n)
	}
}

// A Gemini that took the Enter (its composer empty again) while its
// BeforeAgent hook is late gets no Enter once more: the empty composer
// is never a dropped Enter, however long the hook takes.
func TestATakenEnterWithALateHookIsNeverPressedAgain(t *testing.T) {
	f := newFleet(t)
	p := startGemini(f, gemTakesEnter)
	one := f.queue("w-1", "hello gemini", time.Time{})
	f.waitOutput(p.ID, "SUBMITTED: hello gemini")
	time.Sleep(3 * time.Second) // well past the early looks
	if got := f.turn(one); got.State != lifecycle.StateTyped || got.Enter != 0 {
		t.Errorf("turn %s with %d extra Enters before its hook, want typed with none", got.State, got.Enter)
	}
	f.add("w-1", events.AgentSubmitted{Via: "hook"}, one)
	f.waitTurn(one, lifecycle.StateSubmitted)
	if n, _ := f.enters(p.ID, "hello gemini"); n != 1 {
		t.Errorf("%d Enters after the text, want 1 (herdr's own only)", n)
	}
}

// Gemini's screen says a typed text is unsubmitted only when its idle
// composer holds that whole text: the real 0.61.0 screen of a dropped
// Enter (captured in the mixed fleet's test, +1 s after it), with or
// without the empty row an Enter taken as a newline adds; never an empty
// composer, one at work, its hooks' row up, another text or a part.
func TestGeminiTellsADroppedEnterOnItsRealScreens(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "gemini", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dropped := read("dropped-enter")
	newline := strings.Replace(dropped, " > by name to gm-2\n", " > by name to gm-2\n   \n", 1)
	if newline == dropped {
		t.Fatal("dropped-enter.txt has no composer row to add a newline to")
	}
	g := herdrbridge.Gemini{}
	tests := []struct {
		screen, text string
		want         bool
	}{
		{dropped, "by name to gm-2", true},
		{newline, "by name to gm-2", true},
		{read("draft"), "a draft\nof two lines", true},
		{dropped, "by name to gm-1", false},
		{dropped, "by name", false},
		{read("submitted-hooks"), "gemini fan-out 1", false},
		{read("submitted-hooks"), "by name to gm-2", false},
		{read("working"), "hello", false},
		{read("hook-after-reply"), "hello", false},
		{read("replied"), "hello", false},
		{read("empty-start"), "hello", false},
		{read("shell-mode"), "ls", false},
	}
	for i, tt := range tests {
		if got := g.Unsubmitted(tt.screen, tt.text); got != tt.want {
			t.Errorf("%d: Unsubmitted(%q) = %v, want %v", i, tt.text, got, tt.want)
		}
	}
	if g.EnterAgainAfter() <= 0 || g.EnterAgainAfter() > 2*time.Second {
		t.Errorf("Gemini's EnterAgainAfter %v, want about a second", g.EnterAgainAfter())
	}
}
