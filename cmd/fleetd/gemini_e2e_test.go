package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// geminiRole is a role of real Gemini CLI agents (geminiBin) against the
// fake API at baseURL (its Gemini protocol), through the gateway env
// class: the pane's GOOGLE_GEMINI_BASE_URL is the role's base_url, and
// fleetd writes each agent's settings (its hooks, the API-key login, the
// model pinned) into its own GEMINI_CLI_HOME.
func geminiRole(geminiBin, baseURL string, env map[string]string, more map[string]any) map[string]any {
	role := map[string]any{
		"kind":      "gemini",
		"command":   []string{geminiBin, "{resume}"},
		"model":     "gemini-2.5-flash",
		"env_class": "gateway",
		"base_url":  baseURL,
		"env":       map[string]string{"GEMINI_API_KEY": "fake-key", "HOME": env["HOME"]},
	}
	maps.Copy(role, more)
	return role
}

// Any text a lead sends reaches the real Gemini CLI's model exactly as
// the text rule makes it, typed or by a file hand-over, or is refused up
// front; none wedges the agent (a canary after each case is answered)
// and none runs a shell command (no marker file appears). A multi-line
// text sent the moment a new agent is registered arrives whole. A Gemini
// agent killed while idle comes back resuming its session: the next
// request carries the earlier conversation.
func TestRealGeminiReceivesAnyTextExactlyAndComesBackResumed(t *testing.T) {
	geminiBin := fakeapi.RequireGemini(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-gm", "work-gm-new"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-gemini": geminiRole(geminiBin, baseURL, env, map[string]any{
			"restart": "on-failure", "restart_backoff": "200ms"})}
	}, "--submit-timeout", "10s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "gm-1", "w-gemini", "work-gm")
	fleet.waitReady(ctx, 90*time.Second, "gm-1")
	t.Logf("gm-1 ready after %v", time.Since(started).Round(time.Millisecond))
	if a := agentNamed(t, fleet, ctx, "gm-1"); a.Kind != "gemini" {
		t.Errorf("gm-1's kind on the roster: %q, want gemini", a.Kind)
	}

	big := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %06d: the quick brown fox jumps over the lazy dog\n", i)
		}
		return b.String()[:n-1] + "."
	}
	cases := []textCase{
		{name: "plain text", text: "hello gemini, answer me", status: 200, delivery: "paste"},
		{name: "two lines", text: "first line\nsecond line", status: 200, delivery: "paste"},
		{name: "non-ASCII", text: "naïve café — 日本語 ✓ 🎉 cafe\u0301", status: 200, delivery: "paste"},
		{name: "tabs", text: "code:\n\tfunc main() {}", status: 200, delivery: "paste"},
		// Mode characters: pasted, "!" and "?" are text (only a typed "!"
		// switches Gemini to its shell mode).
		{name: "a bare question mark", text: "?", status: 200, delivery: "paste"},
		{name: "a leading question mark", text: "? what does this do", status: 200, delivery: "paste"},
		{name: "a bare bang", text: "!", status: 200, delivery: "paste"},
		{name: "a leading bang (shell mode)", text: "!touch PWNED-gm-bang.txt", status: 200, delivery: "paste"},
		{name: "a leading bang, over lines", text: "!touch PWNED-gm-bang2.txt\nand a second line", status: 200, delivery: "paste"},
		// A leading "/" is a command, any "@" a file mention: as files.
		{name: "a bare slash", text: "/", status: 200, delivery: "file"},
		{name: "a leading slash command", text: "/help me write the tests", status: 200, delivery: "file"},
		{name: "a slash command after spaces", text: "  /help after spaces", status: 200, delivery: "file"},
		{name: "a path is a command to Gemini", text: "/tmp/foo.go is broken, fix it", status: 200, delivery: "file"},
		{name: "a bare at sign", text: "@", status: 200, delivery: "file"},
		{name: "a leading at sign", text: "@nobody", status: 200, delivery: "file"},
		{name: "an at sign inside", text: "hello @nobody answer", status: 200, delivery: "file"},
		{name: "a trailing backslash", text: `the path is C:\`, status: 200, delivery: "file"},
		{name: "a trailing newline", text: "fix the tests\n", status: 200, delivery: "file"},
		{name: "a lone ESC", text: "lonely \x1b escape", status: 200, delivery: "paste"},
		// Over 500 characters Gemini shows a placeholder and sends the
		// whole text on submit.
		{name: "a 6 KB text", text: big(6 << 10), status: 200, delivery: "paste"},
		{name: "a 100 KB text", text: big(100 << 10), status: 200, delivery: "file"},
		{name: "an explicit /clear", command: "/clear", status: 200, delivery: "command"},
		{name: "a command the role does not allow", command: "/quit", status: http.StatusBadRequest},
		{name: "over 1 MiB", text: strings.Repeat("x", 1<<20+1), status: http.StatusRequestEntityTooLarge},
	}
	fleet.textTable(ctx, log, "gm-1", fleet.work("work-gm"), cases)
	t.Logf("%d cases after %v", len(cases), time.Since(started).Round(time.Millisecond))

	// A multi-line text sent the moment a new agent is registered: typed
	// only once its session started and its composer is up, so it
	// arrives whole.
	fleet.spawn(ctx, "gm-new", "w-gemini", "work-gm-new")
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if _, ok := findAgent(roster, "gm-new"); !ok {
			return fmt.Errorf("gm-new is not on the roster yet")
		}
		return nil
	})
	fleet.checkText(ctx, log, "gm-new", textCase{text: "first:\nsecond line\nthird line\nfourth line", status: 200, delivery: "paste"}, fleet.work("work-gm-new"))

	// Its tokens come from Gemini's session file.
	if r := fleet.send(ctx, leadshim.Message{To: "gm-1", Text: "count my tokens", Timeout: "90s"}); r.status != 200 || fleet.settled(ctx, r.env).Tokens.In == 0 || fleet.settled(ctx, r.env).Tokens.Out == 0 {
		t.Errorf("a Gemini turn's tokens: HTTP %d %+v, want some in and out", r.status, r.env.Tokens)
	}

	// Killed while idle: restarted in a new pane, resuming its session.
	before := agentNamed(t, fleet, ctx, "gm-1")
	fleet.killClaude(t, before.Pane)
	var after projections.Agent
	checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
		after = agentNamed(t, fleet, ctx, "gm-1")
		if after.Restarts != 1 || after.Pane == before.Pane || !after.Ready() {
			return fmt.Errorf("gm-1 not ready after its restart: %+v", after)
		}
		return nil
	})
	if after.SessionID != before.SessionID {
		t.Errorf("gm-1 came back in session %s, want %s resumed", after.SessionID, before.SessionID)
	}
	recall := "which words did I send first?"
	if r := fleet.send(ctx, leadshim.Message{To: "gm-1", Text: recall, Timeout: "90s"}); r.status != 200 || r.env.Status != "replied" || r.env.Reply != "ECHO: "+recall {
		t.Fatalf("turn after the restart: HTTP %d %s", r.status, r.body)
	}
	var resumed bool
	for _, req := range fleet.api.Requests() {
		if req.Prompt == recall && bytes.Contains(req.Body, []byte("count my tokens")) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("the request for %q does not carry the conversation from before the restart", recall)
	}

	// How often Gemini took the Enter after a paste for a newline (its
	// event loop behind, on a loaded machine) and fleetd pressed it once
	// more: said, not failed, since it depends on the machine.
	// The slowest typing to proof of submission says how long such a
	// turn stalled (a second or two since Gemini's kind presses it early,
	// EnterDropper).
	enters := 0
	typedAt := map[string]time.Time{}
	var slowest time.Duration
	for _, ev := range readEvents(t, ctx, log, "fleet.>") {
		switch d := ev.Data.(type) {
		case events.AgentTyped:
			if d.Enter > 0 {
				enters++
			} else {
				typedAt[ev.CorrelationID] = ev.Time
			}
		case events.AgentSubmitted:
			if at, ok := typedAt[ev.CorrelationID]; ok {
				slowest = max(slowest, ev.Time.Sub(at))
			}
		}
	}
	t.Logf("Enter pressed once more for %d turns; slowest typing to submission %v", enters, slowest.Round(time.Millisecond))

	marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*"))
	if len(marks) > 0 {
		t.Errorf("a shell command ran: %v", marks)
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
