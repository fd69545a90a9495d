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

// codexRole is a role of real Codex agents (codexBin) against the fake
// API at baseURL (its Responses protocol), through the gateway env class:
// fleetd writes the model provider into each agent's own CODEX_HOME.
func codexRole(codexBin, baseURL string, env map[string]string, more map[string]any) map[string]any {
	role := map[string]any{
		"kind":      "codex",
		"command":   []string{codexBin, "{resume}"},
		"model":     "fake-model",
		"env_class": "gateway",
		"base_url":  baseURL + "/v1",
		"env":       map[string]string{"OPENAI_API_KEY": "sk-fake", "HOME": env["HOME"]},
	}
	maps.Copy(role, more)
	return role
}

// Any text a lead sends reaches the real Codex's model exactly as the text
// rule makes it, typed or by a file hand-over, or is refused up front;
// none wedges the agent (a canary after each case is answered) and none
// runs a shell command (no marker file appears). A Codex agent killed
// while idle comes back resuming its thread: the next request carries the
// earlier conversation.
func TestRealCodexReceivesAnyTextExactlyAndComesBackResumed(t *testing.T) {
	codexBin := fakeapi.RequireCodex(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-cx"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-codex": codexRole(codexBin, baseURL, env, map[string]any{
			"restart": "on-failure", "restart_backoff": "200ms"})}
	}, "--submit-timeout", "30s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "cx-1", "w-codex", "work-cx")
	t.Logf("cx-1 spawned after %v", time.Since(started).Round(time.Millisecond))
	if a := agentNamed(t, fleet, ctx, "cx-1"); a.Kind != "codex" {
		t.Errorf("cx-1's kind on the roster: %q, want codex", a.Kind)
	}

	cases := []textCase{
		{name: "plain text", text: "hello codex, answer me", status: 200, delivery: "paste"},
		{name: "two lines", text: "first line\nsecond line", status: 200, delivery: "paste"},
		{name: "non-ASCII", text: "naïve café — 日本語 ✓ 🎉", status: 200, delivery: "paste"},
		{name: "a question mark", text: "?", status: 200, delivery: "paste"},
		{name: "an at sign inside", text: "hello @nobody answer", status: 200, delivery: "paste"},
		{name: "a leading bang (shell mode)", text: "!touch PWNED-cx-bang.txt", status: 200, delivery: "file"},
		{name: "a bare bang", text: "!", status: 200, delivery: "file"},
		{name: "a leading slash command", text: "/help me write the tests", status: 200, delivery: "file"},
		{name: "a bare slash", text: "/", status: 200, delivery: "file"},
		{name: "a slash command after spaces", text: "  /help after spaces", status: 200, delivery: "file"},
		{name: "a leading at sign", text: "@nobody", status: 200, delivery: "file"},
		{name: "tabs", text: "code:\n\tfunc main() {}", status: 200, delivery: "file"},
		{name: "a lone ESC", text: "lonely \x1b escape", status: 200, delivery: "paste"},
		{name: "a 100 KB text", text: strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100<<10/44) + "end.", status: 200, delivery: "file"},
		{name: "over 1 MiB", text: strings.Repeat("x", 1<<20+1), status: http.StatusRequestEntityTooLarge},
	}
	fleet.textTable(ctx, log, "cx-1", fleet.work("work-cx"), cases)
	marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*"))
	if len(marks) > 0 {
		t.Errorf("a shell command ran: %v", marks)
	}
	t.Logf("%d cases after %v", len(cases), time.Since(started).Round(time.Millisecond))

	// Its tokens come from Codex's rollout file.
	if r := fleet.send(ctx, leadshim.Message{To: "cx-1", Text: "count my tokens", Timeout: "90s"}); r.status != 200 || fleet.settled(ctx, r.env).Tokens.In == 0 || fleet.settled(ctx, r.env).Tokens.Out == 0 {
		t.Errorf("a Codex turn's tokens: HTTP %d %+v, want some in and out", r.status, r.env.Tokens)
	}

	// Killed while idle: restarted in a new pane, resuming its thread.
	before := agentNamed(t, fleet, ctx, "cx-1")
	fleet.killClaude(t, before.Pane)
	var after projections.Agent
	checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
		after = agentNamed(t, fleet, ctx, "cx-1")
		if after.Restarts != 1 || after.Pane == before.Pane || !after.Ready() {
			return fmt.Errorf("cx-1 not ready after its restart: %+v", after)
		}
		return nil
	})
	recall := "which words did I send first?"
	if r := fleet.send(ctx, leadshim.Message{To: "cx-1", Text: recall, Timeout: "90s"}); r.status != 200 || r.env.Status != "replied" {
		t.Fatalf("turn after the restart: HTTP %d %s", r.status, r.body)
	}
	var resumed bool
	for _, req := range fleet.api.Requests() {
		if req.Prompt == recall && bytes.Contains(req.Body, []byte("hello codex, answer me")) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("the request for %q does not carry the conversation from before the restart", recall)
	}
}
