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

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// piRole is a role of real Pi agents (piBin) against the fake API at
// baseURL (Anthropic Messages), through the gateway env class: fleetd
// writes the model provider into each agent's own Pi directory.
func piRole(piBin, baseURL string, env map[string]string, more map[string]any) map[string]any {
	role := map[string]any{
		"kind":      "pi",
		"command":   []string{piBin, "{resume}"},
		"model":     "fake-model",
		"env_class": "gateway",
		"base_url":  baseURL,
		"env":       map[string]string{"ANTHROPIC_API_KEY": "sk-fake", "HOME": env["HOME"]},
	}
	maps.Copy(role, more)
	return role
}

// Any text a lead sends reaches the real Pi's model exactly as the text
// rule makes it, typed or by a file hand-over, or is refused up front;
// none wedges the agent (a canary after each case is answered) and none
// runs a shell command (no marker file appears). A multi-line text sent
// the moment a new agent is registered arrives whole; explicit commands
// run as commands, and a fresh-context role's turns start from a new
// session. A Pi agent killed while idle comes back resuming its
// session (--session <id>): the next request carries the earlier
// conversation; one killed before its first reply comes back in its
// session too.
func TestRealPiReceivesAnyTextExactlyAndComesBackResumed(t *testing.T) {
	piBin := fakeapi.RequirePi(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-pi", "work-pi-new", "work-pi-fresh", "work-pi-early"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{
			"w-pi": piRole(piBin, baseURL, env, map[string]any{"restart": "on-failure", "restart_backoff": "200ms",
				"commands": []string{"/clear", "/new", "/compact", "/settings"}}),
			// Every prompt turn starts from a clean context: fleetd types
			// /clear first, which its extension gives Pi.
			"w-pi-fresh": piRole(piBin, baseURL, env, map[string]any{"fresh_context": true}),
		}
	}, "--submit-timeout", "30s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "pi-1", "w-pi", "work-pi")
	fleet.waitReady(ctx, 90*time.Second, "pi-1")
	t.Logf("pi-1 ready after %v", time.Since(started).Round(time.Millisecond))
	if a := agentNamed(t, fleet, ctx, "pi-1"); a.Kind != "pi" {
		t.Errorf("pi-1's kind on the roster: %q, want pi", a.Kind)
	}

	cases := []textCase{
		{name: "plain text", text: "hello pi, answer me", status: 200, delivery: "paste"},
		{name: "two lines", text: "first line\nsecond line", status: 200, delivery: "paste"},
		{name: "non-ASCII", text: "naïve café — 日本語 ✓ 🎉 \u00e9", status: 200, delivery: "paste"},
		{name: "a question mark", text: "?", status: 200, delivery: "paste"},
		{name: "a leading at sign", text: "@nobody please answer", status: 200, delivery: "paste"},
		{name: "a bare at sign", text: "@", status: 200, delivery: "paste"},
		{name: "a leading hash", text: "#remember this", status: 200, delivery: "paste"},
		{name: "a bare hash", text: "#", status: 200, delivery: "paste"},
		// Pi keeps a combining accent as it is (no NFC), and invisible
		// characters and a line separator inside a text.
		{name: "a combining accent", text: "cafe\u0301", status: 200, delivery: "paste"},
		{name: "invisible characters inside", text: "zero\u200bwidth and line\u2028separator", status: 200, delivery: "paste"},
		{name: "a paste marker as text", text: "[paste #1 +3 lines] is how Pi shows a long paste", status: 200, delivery: "paste"},
		{name: "a path is text", text: "~/x and ./y are paths", status: 200, delivery: "paste"},
		{name: "a leading bang (shell mode)", text: "!touch PWNED-pi-bang.txt", status: 200, delivery: "file"},
		{name: "a double bang", text: "!!touch PWNED-pi-bangbang.txt", status: 200, delivery: "file"},
		{name: "a bare bang", text: "!", status: 200, delivery: "file"},
		{name: "a bang after spaces", text: "  !touch PWNED-pi-space.txt", status: 200, delivery: "file"},
		{name: "a leading slash command", text: "/help me write the tests", status: 200, delivery: "file"},
		{name: "a command of Pi's as text", text: "/compact everything now", status: 200, delivery: "file"},
		{name: "a bare slash", text: "/", status: 200, delivery: "file"},
		{name: "tabs", text: "code:\n\tfunc main() {}", status: 200, delivery: "file"},
		{name: "a trailing backslash", text: `the path is C:\`, status: 200, delivery: "file"},
		{name: "a trailing newline", text: "fix the tests\n", status: 200, delivery: "file"},
		{name: "a lone ESC", text: "lonely \x1b escape", status: 200, delivery: "paste"},
		{name: "control sequences", text: "\x1b[31mred\x1b[0m text\x03 and\x7f a \x1b]0;title\x07bell", status: 200, delivery: "paste"},
		// More than ten lines: Pi shows a "[paste #1 +20 lines]" marker
		// and sends the whole text.
		{name: "twenty lines", text: strings.Repeat("a line of the paste\n", 20) + "end.", status: 200, delivery: "paste"},
		{name: "a long paste holding its own marker", text: strings.Repeat("[paste #1 +12 lines] a line\n", 11) + "end.", status: 200, delivery: "paste"},
		{name: "a 20 KB text", text: strings.Repeat("the quick brown fox jumps over the lazy dog\n", 20<<10/44) + "end.", status: 200, delivery: "paste"},
		{name: "a 100 KB text", text: strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100<<10/44) + "end.", status: 200, delivery: "file"},
		// The model API refuses the request: Pi ends the turn in an
		// error, which its extension reports as StopFailure.
		{name: "an API error", text: "fail please [status=400]", status: 200, failedWith: "invalid_request_error"},
		{name: "over 1 MiB", text: strings.Repeat("x", 1<<20+1), status: http.StatusRequestEntityTooLarge},
		{name: "a command the role does not allow", command: "/quit", status: http.StatusBadRequest},
	}
	fleet.textTable(ctx, log, "pi-1", fleet.work("work-pi"), cases)
	t.Logf("%d cases after %v", len(cases), time.Since(started).Round(time.Millisecond))

	// Its tokens come from Pi's session file.
	if r := fleet.send(ctx, leadshim.Message{To: "pi-1", Text: "count my tokens", Timeout: "90s"}); r.status != 200 || r.env.Tokens.In == 0 || r.env.Tokens.Out == 0 {
		t.Errorf("a Pi turn's tokens: HTTP %d %+v, want some in and out", r.status, r.env.Tokens)
	}

	// A multi-line text sent the moment a new agent is registered: it is
	// typed only once Pi's editor is up, so it arrives whole. Then an
	// explicit /compact (Pi summarises the session), /new (it starts
	// another) and /settings (a selector), each with a canary.
	fleet.spawn(ctx, "pi-new", "w-pi", "work-pi-new")
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if _, ok := findAgent(roster, "pi-new"); !ok {
			return fmt.Errorf("pi-new is not on the roster yet")
		}
		return nil
	})
	fleet.textTable(ctx, log, "pi-new", fleet.work("work-pi-new"), []textCase{
		{name: "multi-line at once", text: "first:\nsecond line\nthird line\nfourth line", status: 200, delivery: "paste"},
		{name: "an explicit /compact", command: "/compact", status: 200, delivery: "command"},
		{name: "an explicit /new", command: "/new", status: 200, delivery: "command"},
		// A command that opens a selector nobody answers: it is closed
		// (the canary after it is answered) and the turn says so.
		{name: "a command that opens a selector", command: "/settings", status: 200, failedWith: "waits for a person's key"},
	})
	checkfor.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		if a := agentNamed(t, fleet, ctx, "pi-new"); !a.Ready() || a.SessionEnded {
			return fmt.Errorf("pi-new after its commands: %+v, want ready", a)
		}
		return nil
	})

	// A fresh-context role: /clear is typed before each prompt, so the
	// model sees no earlier turn.
	fleet.spawn(ctx, "pi-fresh", "w-pi-fresh", "work-pi-fresh")
	fleet.waitReady(ctx, 90*time.Second, "pi-fresh")
	for _, text := range []string{"fresh one: remember the word KUMQUAT", "fresh two: which word?"} {
		turn := fleet.checkText(ctx, log, "pi-fresh", textCase{text: text, status: 200, delivery: "paste"}, fleet.work("work-pi-fresh"))
		if !turn.Clear {
			t.Errorf("%q: typed without /clear first", text)
		}
	}
	for _, req := range fleet.api.Requests() {
		if req.Prompt == "fresh two: which word?" && bytes.Contains(req.Body, []byte("KUMQUAT")) {
			t.Errorf("the second fresh turn's request still holds the first turn")
		}
	}

	// No case ran a shell command.
	marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*"))
	if len(marks) > 0 {
		t.Errorf("a shell command ran: %v", marks)
	}

	// Killed while idle: restarted in a new pane, resuming its session.
	before := agentNamed(t, fleet, ctx, "pi-1")
	fleet.killClaude(t, before.Pane)
	var after projections.Agent
	checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
		after = agentNamed(t, fleet, ctx, "pi-1")
		if after.Restarts != 1 || after.Pane == before.Pane || !after.Ready() {
			return fmt.Errorf("pi-1 not ready after its restart: %+v", after)
		}
		return nil
	})
	if after.SessionID != before.SessionID {
		t.Errorf("pi-1 came back in session %s, want %s resumed", after.SessionID, before.SessionID)
	}
	recall := "which words did I send first?"
	if r := fleet.send(ctx, leadshim.Message{To: "pi-1", Text: recall, Timeout: "90s"}); r.status != 200 || r.env.Status != "replied" || r.env.Reply != "ECHO: "+recall {
		t.Fatalf("turn after the restart: HTTP %d %s", r.status, r.body)
	}
	var resumed bool
	for _, req := range fleet.api.Requests() {
		if req.Prompt == recall && bytes.Contains(req.Body, []byte("hello pi, answer me")) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("the request for %q does not carry the conversation from before the restart", recall)
	}

	// Killed before its first reply, when Pi has written no session file
	// yet: it comes back in the same session all the same.
	fleet.spawn(ctx, "pi-early", "w-pi", "work-pi-early")
	early := fleet.waitReady(ctx, 90*time.Second, "pi-early")
	first, _ := findAgent(early, "pi-early")
	fleet.killClaude(t, first.Pane)
	checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
		a := agentNamed(t, fleet, ctx, "pi-early")
		if a.Restarts != 1 || a.Pane == first.Pane || !a.Ready() || a.SessionID != first.SessionID {
			return fmt.Errorf("pi-early not back in session %s: %+v", first.SessionID, a)
		}
		return nil
	})
	if r := fleet.send(ctx, leadshim.Message{To: "pi-early", Text: "are you back?", Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: are you back?" {
		t.Errorf("turn after the early restart: HTTP %d %s", r.status, r.body)
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
