package agentapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// claudeAgent is the real Claude Code under the real agentapi, against a
// fake model API, with hooks that record their payloads.
type claudeAgent struct {
	srv   *agentapi.Server
	fake  *fakeapi.Server
	hooks string
	ev    *agentapi.Stream
}

func startClaude(t *testing.T) *claudeAgent {
	t.Helper()
	requireAgentapi(t)
	fake := fakeapi.Start(t)
	c := fakeapi.SetupClaude(t, fake.URL())
	hooks := t.TempDir()
	settings := filepath.Join(t.TempDir(), "settings.json")
	rec := map[string]string{}
	for _, e := range []string{"SessionStart", "UserPromptSubmit", "Stop", "Notification"} {
		rec[e] = fakeapi.RecordHookCommand(hooks, e)
	}
	if err := (fakeapi.ClaudeSettings{Hooks: rec}).Write(settings); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	srv := start(t, agentapi.Config{
		Program: c.Bin, Args: []string{"--settings", settings}, Type: "claude",
		Dir: c.Workdir, Env: c.Env, Width: 120, Height: 50,
	})
	ev, err := srv.Client().Events(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ev.Close() })
	a := &claudeAgent{srv: srv, fake: fake, hooks: hooks, ev: ev}
	waitStatus(t, ev, agentapi.StatusStable, 60*time.Second)
	t.Logf("Claude Code stable under agentapi %v after start", time.Since(t0).Round(10*time.Millisecond))
	return a
}

type hookPayload struct {
	SessionID            string `json:"session_id"`
	PromptID             string `json:"prompt_id"`
	Prompt               string `json:"prompt"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

func (a *claudeAgent) payloads(t *testing.T, event string) []hookPayload {
	t.Helper()
	raws, err := fakeapi.ReadHookPayloads(a.hooks, event)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]hookPayload, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("%s payload %s: %v", event, r, err)
		}
	}
	return out
}

// turn waits for the n-th Stop hook and then for agentapi's "stable",
// and returns what the model was sent and how long "stable" came after
// the Stop hook.
func (a *claudeAgent) turn(t *testing.T, n int, canary string) (prompt string, lag time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	r, err := a.fake.WaitFor(ctx, func(r fakeapi.Request) bool { return strings.Contains(r.Prompt, canary) })
	if err != nil {
		t.Fatalf("the model never saw %s: %v", canary, err)
	}
	var stopAt time.Time
	checkfor.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
		if got := len(a.payloads(t, "Stop")); got < n {
			return fmt.Errorf("%d Stop hooks, want %d", got, n)
		}
		stopAt = time.Now()
		return nil
	})
	waitStatus(t, a.ev, agentapi.StatusStable, 30*time.Second)
	return r.Prompt, time.Since(stopAt)
}

// paste types text the way fleetd's typing plan does: a bracketed paste
// per piece, written raw, then Enter on its own 300 ms later.
func paste(t *testing.T, c *agentapi.Client, pieces ...string) {
	t.Helper()
	for _, p := range pieces {
		if err := c.Paste(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if err := c.SendKeys(t.Context(), "enter"); err != nil {
		t.Fatal(err)
	}
}

// promptBox reports whether the screen ends in Claude Code's prompt box:
// a "❯" row between two rules, at most a short footer below.
func promptBox(screen string) bool {
	rows := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	for i := len(rows) - 1; i >= 2 && i >= len(rows)-6; i-- {
		if strings.HasPrefix(strings.TrimSpace(rows[i]), "──────────") &&
			strings.HasPrefix(strings.TrimSpace(rows[i-1]), "❯") &&
			strings.HasPrefix(strings.TrimSpace(rows[i-2]), "──────────") {
			return true
		}
	}
	return false
}

// TestClaudeCodeUnderAgentapi runs the real Claude Code under the real
// agentapi: the screen shows its prompt box, fleetd's raw typing delivers
// text exactly (one paste; pieces with newlines), the hooks fire as in a
// herdr pane, and agentapi's own user message wraps multi-line text in
// <pasted_content> (why fleetd types raw).
func TestClaudeCodeUnderAgentapi(t *testing.T) {
	a := startClaude(t)
	c := a.srv.Client()
	screen, err := c.Screen(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !promptBox(screen) {
		t.Fatalf("no prompt box at the bottom of the screen:\n%s", lastRows(screen, 10))
	}
	if fg, comm, err := a.srv.Foreground(); err != nil || comm != "claude" {
		t.Errorf("foreground = %d %q (%v), want claude", fg, comm, err)
	}
	if len(a.payloads(t, "SessionStart")) != 1 {
		t.Errorf("SessionStart hooks = %d, want 1", len(a.payloads(t, "SessionStart")))
	}

	one := "please reply with CANARY_ONE"
	paste(t, c, one)
	got, lag := a.turn(t, 1, "CANARY_ONE")
	if got != one {
		t.Errorf("model saw %q, want %q", got, one)
	}
	t.Logf("turn 1 (one raw paste): stable %v after the Stop hook", lag.Round(10*time.Millisecond))

	multi := "first line\nsecond line\nthird line CANARY_TWO"
	paste(t, c, "first line\nsecond line\n", "third line CANARY_TWO")
	got, lag = a.turn(t, 2, "CANARY_TWO")
	if got != multi {
		t.Errorf("model saw %q, want %q", got, multi)
	}
	t.Logf("turn 2 (two raw pieces): stable %v after the Stop hook", lag.Round(10*time.Millisecond))

	agentapiMulti := "alpha\nbeta\ngamma\ndelta CANARY_THREE"
	t0 := time.Now()
	if err := c.Send(t.Context(), agentapiMulti); err != nil {
		t.Fatal(err)
	}
	t.Logf("turn 3: agentapi's POST /message answered after %v", time.Since(t0).Round(10*time.Millisecond))
	got, lag = a.turn(t, 3, "CANARY_THREE")
	if got == agentapiMulti || !strings.Contains(got, "<pasted_content") {
		t.Errorf("model saw %q: agentapi's one paste of a 4-line text no longer becomes <pasted_content> (docs/agentapi.md says it does)", got)
	}
	t.Logf("turn 3 (agentapi's user message): stable %v after the Stop hook", lag.Round(10*time.Millisecond))

	subs, stops := a.payloads(t, "UserPromptSubmit"), a.payloads(t, "Stop")
	if len(subs) != 3 || len(stops) != 3 {
		t.Fatalf("hooks: %d UserPromptSubmit, %d Stop, want 3 each", len(subs), len(stops))
	}
	for i := range subs {
		if subs[i].PromptID == "" || subs[i].PromptID != stops[i].PromptID || subs[i].SessionID != stops[i].SessionID {
			t.Errorf("turn %d: UserPromptSubmit %+v and Stop %+v do not share prompt and session ids", i+1, subs[i], stops[i])
		}
	}
	if want := "ECHO: " + multi; stops[1].LastAssistantMessage != want {
		t.Errorf("turn 2 reply = %q, want %q", stops[1].LastAssistantMessage, want)
	}
}
