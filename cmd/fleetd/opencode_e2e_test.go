package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// openCodeRole is a role of real OpenCode agents (openCodeBin) against
// the fake API at baseURL (its Anthropic Messages protocol), through the
// gateway env class: fleetd writes the "fleet" provider into each agent's
// own config directory. OpenCode follows XDG: its data (sessions), state
// and cache go under the test's home, never the user's.
func openCodeRole(openCodeBin, baseURL string, env map[string]string, more map[string]any) map[string]any {
	home := env["HOME"]
	role := map[string]any{
		"kind":      "opencode",
		"command":   []string{openCodeBin, "{resume}"},
		"model":     "fleet/fake-model",
		"env_class": "gateway",
		"base_url":  baseURL + "/v1",
		"env": map[string]string{"ANTHROPIC_API_KEY": "sk-fake", "HOME": home,
			"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share"),
			"XDG_STATE_HOME": filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME": filepath.Join(home, ".cache")},
	}
	maps.Copy(role, more)
	return role
}

// seedOpenCodeGlobalConfig keeps OpenCode from npm-installing its plugin
// package into the test home's global config directory at each start (as
// fleetd does for the agent's own): the test stays off the registry.
func seedOpenCodeGlobalConfig(t *testing.T, home string) {
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	dep := `{"@opencode-ai/plugin":"` + fakeapi.OpenCodeVersion + `"}`
	for name, body := range map[string]string{
		"package.json":      `{"dependencies":` + dep + `}`,
		"package-lock.json": `{"lockfileVersion":3,"packages":{"":{"dependencies":` + dep + `}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Any text a lead sends reaches the real OpenCode's model exactly as the
// text rule makes it, typed or by a file hand-over, or is refused up
// front; none wedges the agent (a canary after each case is answered)
// and none runs a shell command (no marker file appears). The first text
// goes the moment the new agent is ready. Its tokens come from fleetd's
// plugin. An OpenCode agent killed while idle comes back resuming its
// session (opencode --session ses_…): the next request carries the
// earlier conversation.
func TestRealOpenCodeReceivesAnyTextExactlyAndComesBackResumed(t *testing.T) {
	openCodeBin := fakeapi.RequireOpenCode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-oc"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-opencode": openCodeRole(openCodeBin, baseURL, env, map[string]any{
			"restart": "on-failure", "restart_backoff": "200ms"})}
	}, "--submit-timeout", "30s")
	seedOpenCodeGlobalConfig(t, fleet.home)
	log, _ := connectLog(t, fleet.up.url)
	// OpenCode takes 6-8 s to draw its box on an idle machine, many more
	// on a loaded one: the spawn returns at once and the first send waits
	// for the box, up to its own timeout.
	spawnCtx, spawnCancel := context.WithTimeout(ctx, 3*time.Minute)
	spawn := exec.CommandContext(spawnCtx, fleetdBin, "spawn", "--role", "w-opencode", "--name", "oc-1", "--cwd", fleet.work("work-oc"), "--no-wait",
		"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
	spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(),
		"FLEET_NATS_URL="+fleet.up.url, "FLEET_URL="+fleet.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
	out, err := spawn.CombinedOutput()
	spawnCancel()
	if err != nil {
		t.Fatalf("fleetd spawn oc-1: %v\n%s", err, out)
	}
	t.Logf("oc-1 spawned after %v", time.Since(started).Round(time.Millisecond))
	if a := agentNamed(t, fleet, ctx, "oc-1"); a.Kind != "opencode" {
		t.Errorf("oc-1's kind on the roster: %q, want opencode", a.Kind)
	}

	// Sent at once: the send waits for the new agent's empty box. The
	// first prompt of a session also goes to the model in OpenCode's
	// title call (the fake answers it as auxiliary), so it is checked
	// here rather than in the table, which counts every request with the
	// prompt.
	first := "first line\nsecond line"
	before := len(fleet.api.Requests())
	r := fleet.send(ctx, leadshim.Message{To: "oc-1", Text: first, Timeout: "3m"})
	if r.status != 200 || r.env.Status != "replied" || r.env.Reply != "ECHO: "+first {
		t.Fatalf("the first text: HTTP %d %s", r.status, r.body)
	}
	if d := fleet.turnFromLog(ctx, log, r.env.ID).Delivery; d != "paste" {
		t.Errorf("the first text was delivered by %q, want paste", d)
	}
	var turns int
	for _, req := range fleet.api.Requests()[before:] {
		if req.Prompt == first && req.Rule != "auxiliary" {
			turns++
		}
	}
	if turns != 1 {
		t.Errorf("the model got the first text as a turn %d times, want 1", turns)
	}
	t.Logf("oc-1 answered its first text after %v", time.Since(started).Round(time.Millisecond))

	cases := []textCase{
		{name: "plain text", text: "hello opencode, answer me", status: 200, delivery: "paste"},
		{name: "non-ASCII", text: "naïve café — 日本語 ✓ 🎉", status: 200, delivery: "paste"},
		{name: "a question mark", text: "?", status: 200, delivery: "paste"},
		{name: "an at sign inside", text: "hello @nobody answer", status: 200, delivery: "paste"},
		{name: "a leading bang (a paste is no shell mode)", text: "!touch PWNED-oc-bang.txt", status: 200, delivery: "paste"},
		{name: "a bare bang", text: "!", status: 200, delivery: "paste"},
		{name: "a leading slash command", text: "/help me write the tests", status: 200, delivery: "file"},
		{name: "a bare slash", text: "/", status: 200, delivery: "file"},
		{name: "a slash command after spaces", text: "  /new after spaces", status: 200, delivery: "file"},
		{name: "a leading at sign", text: "@nobody", status: 200, delivery: "file"},
		{name: "tabs", text: "code:\n\tfunc main() {}", status: 200, delivery: "paste"},
		{name: "a lone ESC", text: "lonely \x1b escape", status: 200, delivery: "paste"},
		{name: "many lines (no paste summary)", text: strings.Repeat("a line of the paste\n", 20) + "last", status: 200, delivery: "paste"},
		{name: "a 100 KB text", text: strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100<<10/44) + "end.", status: 200, delivery: "file"},
		{name: "over 1 MiB", text: strings.Repeat("x", 1<<20+1), status: http.StatusRequestEntityTooLarge},
		{name: "an explicit /compact", command: "/compact", status: 200, delivery: "command"},
		{name: "an explicit /new", command: "/new", status: 200, delivery: "command"},
	}
	fleet.textTable(ctx, log, "oc-1", fleet.work("work-oc"), cases)
	marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*"))
	if len(marks) > 0 {
		t.Errorf("a shell command ran: %v", marks)
	}
	t.Logf("%d cases after %v", len(cases), time.Since(started).Round(time.Millisecond))

	// Its tokens come from fleetd's plugin (OpenCode's own count).
	remember := "remember the word PERSIMMON"
	if r := fleet.send(ctx, leadshim.Message{To: "oc-1", Text: remember, Timeout: "90s"}); r.status != 200 || r.env.Tokens.In == 0 || r.env.Tokens.Out == 0 {
		t.Errorf("an OpenCode turn's tokens: HTTP %d %+v, want some in and out", r.status, r.env.Tokens)
	}

	// Killed while idle: restarted in a new pane, resuming its session.
	was := agentNamed(t, fleet, ctx, "oc-1")
	if !strings.HasPrefix(was.SessionID, "ses_") {
		t.Errorf("oc-1's session %q, want OpenCode's ses_…", was.SessionID)
	}
	fleet.killClaude(t, was.Pane)
	var after projections.Agent
	checkfor.Eventually(t, 120*time.Second, 100*time.Millisecond, func() error {
		after = agentNamed(t, fleet, ctx, "oc-1")
		if after.Restarts != 1 || after.Pane == was.Pane || !after.Ready() {
			return fmt.Errorf("oc-1 not ready after its restart: %+v", after)
		}
		return nil
	})
	recall := "which word did I ask you to remember?"
	if r = fleet.send(ctx, leadshim.Message{To: "oc-1", Text: recall, Timeout: "90s"}); r.status != 200 || r.env.Status != "replied" {
		t.Fatalf("turn after the restart: HTTP %d %s", r.status, r.body)
	}
	var resumed bool
	for _, req := range fleet.api.Requests() {
		if req.Prompt == recall && bytes.Contains(req.Body, []byte(remember)) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("the request for %q does not carry the conversation from before the restart", recall)
	}
	if a := agentNamed(t, fleet, ctx, "oc-1"); a.SessionID != was.SessionID {
		t.Errorf("after the restart oc-1's session is %q, want %q resumed", a.SessionID, was.SessionID)
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
