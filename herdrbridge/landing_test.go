package herdrbridge_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
)

// Enter goes when the text has landed in the composer, however long the
// agent takes to show it: the simulated Claude Code here shows a paste
// 700 ms after it arrived, longer than the fixed 300 ms pause, and joins
// an Enter sent before that to the paste as a newline, leaving the prompt
// unsubmitted (Claude Code's paste trap). Every turn — one line, several
// lines in pieces, a text taller than the box, a leading "!" and a
// trailing backslash — is submitted by its first Enter, whole.
func TestEnterWaitsUntilThePasteHasLanded(t *testing.T) {
	f := newFleet(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: []string{exe},
		Env: map[string]string{"HERDR_AGENT": "claude", simAgentEnv: "700ms"}})
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusIdle, herdrapi.StatusDone)
	waitEmptyBox(t, f, p.ID)
	f.register("w-1", p.ID)
	// A bounded wait for proof, so a swallowed Enter shows as the second
	// Enter resolve presses, not as a slow test.
	f.start(func(c *herdrbridge.BridgeConfig) { c.SubmitTimeout = 2 * time.Second })

	var tall []string
	for i := range 12 {
		tall = append(tall, fmt.Sprintf("row %d of a text taller than the box", i))
	}
	for _, text := range []string{
		"one line",
		"several lines:\nthe second\nthe third\nand a fourth",
		strings.Join(tall, "\n"),
		"!touch PWNED.txt and a path C:\\",
	} {
		turn := f.queue("w-1", text, time.Time{})
		got := f.waitTurn(turn, lifecycle.StateSubmitted)
		if got.Method != herdrbridge.MethodLanded || got.Enter != 0 {
			t.Errorf("%q: typed %s with %d extra Enter; want %s and its first Enter taken", text, got.Method, got.Enter, herdrbridge.MethodLanded)
		}
		// The sim answers with the prompt it ran: a one-line text whole.
		first, _, _ := strings.Cut(text, "\n")
		f.waitOutput(p.ID, "SIM: "+first)
		f.add("w-1", events.AgentReplied{Reply: "ok"}, turn)
		f.waitTurn(turn, lifecycle.StateReplied)
		waitEmptyBox(t, f, p.ID)
	}
}

// waitEmptyBox waits until the pane shows Claude Code's empty prompt box.
func waitEmptyBox(t *testing.T, f *fleet, pane string) {
	t.Helper()
	checkfor.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		r, err := f.client.Read(t.Context(), herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return err
		}
		if !herdrbridge.ParseComposer(r.Text).Empty() {
			return fmt.Errorf("the box is not empty:\n%s", r.Text)
		}
		return nil
	})
}

// The sign is read off screens shaped as the real Claude Code 2.1.328
// draws them (tmux capture-pane, 160 columns): the box before a paste
// shows, with the paste, with a tall paste's last rows under "↑ N more".
func TestLandedInComposer(t *testing.T) {
	rule := strings.Repeat("─", 60)
	screen := func(rows ...string) string {
		return strings.Join(append(append([]string{"▎ Auto mode is now Claude Code's default permission mode.", "", "   ◐ medium · /effort", rule},
			rows...), rule, "  ⏵⏵ auto mode on (shift+tab to cycle)"), "\n") + "\n"
	}
	var tall []string
	for i := range 27 {
		tall = append(tall, fmt.Sprintf("line %06d: the quick brown fox", i))
	}
	windowed := func(from int) string {
		rows := []string{"─── ↑ " + fmt.Sprint(from) + " more " + strings.Repeat("─", 50)}
		for _, l := range tall[from:] {
			rows = append(rows, "  "+l)
		}
		return strings.Join(append([]string{"", "ctrl+g to edit in Vim"}, append(rows, rule, "  ⏵⏵ auto mode on (shift+tab to cycle)")...), "\n")
	}
	tests := []struct {
		name, screen, text string
		want               herdrbridge.Landing
	}{
		{"the box before the paste shows", screen("❯\u00a0"), "frame test: please reply", herdrbridge.LandingPending},
		{"the paste shown", screen("❯\u00a0frame test: please reply"), "frame test: please reply", herdrbridge.LandingDone},
		{"lines shown", screen("❯\u00a0code:", "      func main() {}", "  end"), "code:\n    func main() {}\nend", herdrbridge.LandingDone},
		{"a long row wrapped", screen("❯\u00a0the quick brown", "  fox jumps"), "the quick brown fox jumps", herdrbridge.LandingDone},
		{"the first pieces shown", screen("❯\u00a0code:", "      func main() {}"), "code:\n    func main() {}\nend", herdrbridge.LandingPending},
		{"a bang in prompt mode", screen("❯\u00a0!touch x"), "!touch x", herdrbridge.LandingDone},
		{"bash mode is not the text: Enter would run it", screen("!\u00a0touch x"), "!touch x", herdrbridge.LandingShell},
		{"a prompt pasted into bash mode (a person's ! first)", screen("!\u00a0delta: the third"), "delta: the third", herdrbridge.LandingShell},
		{"another text", screen("❯\u00a0a draft"), "frame test", herdrbridge.LandingUnknown},
		{"a tall text's last rows", windowed(7), strings.Join(tall, "\n"), herdrbridge.LandingDone},
		{"an earlier prefix's last rows", windowed(5)[:strings.LastIndex(windowed(5), "\n  line 000026")] + "\n" + rule + "\n  ⏵⏵ auto mode on", strings.Join(tall, "\n"), herdrbridge.LandingPending},
		{"a tail that occurs earlier too", windowed(20), strings.Join(append(tall[20:], tall...), "\n"), herdrbridge.LandingUnknown},
		{"a menu under the box", screen("❯\u00a0/clear") + "  /clear   Clear conversation history\n  /compact  Compact\n  /config   Config\n  /cost     Cost\n  /doctor   Doctor\n", "/clear", herdrbridge.LandingUnknown},
		{"no box", "$ claude\nbash: claude: command not found\n", "hello", herdrbridge.LandingUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := herdrbridge.LandedInComposer(tt.screen, tt.text); got != tt.want {
				t.Errorf("LandedInComposer = %v, want %v; screen:\n%s", got, tt.want, tt.screen)
			}
		})
	}
}
