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
