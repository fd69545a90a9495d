package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/leadshim"
)

// A real Claude Code lead delegating to workers of other kinds through
// `fleetd mcp`: the fake API answers the lead's prompt with two calls of
// the fleetd send tool, one to the Codex role and one to the Gemini role;
// fleetd delivers each task to a real Codex and a real Gemini CLI worker;
// and the lead's Claude Code hands both envelopes back to the model, each
// the reply of an agent of the right kind, each turn queued as the lead's.
func TestRealClaudeLeadDelegatesToCodexAndGeminiThroughFleetdMCP(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	codexBin := fakeapi.RequireCodex(t)
	geminiBin := fakeapi.RequireGemini(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-cx", "work-gm", "lead"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{
			"w-codex":  codexRole(codexBin, baseURL, env, map[string]any{"description": "a real Codex worker against the fake API"}),
			"w-gemini": geminiRole(geminiBin, baseURL, env, map[string]any{"description": "a real Gemini CLI worker against the fake API"}),
		}
	}, "--submit-timeout", "30s")
	fleet.spawn(ctx, "cx-1", "w-codex", "work-cx")
	fleet.spawn(ctx, "gm-1", "w-gemini", "work-gm")
	// Codex reports its session with its first prompt; the send waits
	// for its box. Gemini's session starts with the CLI.
	fleet.waitReady(ctx, 3*time.Minute, "gm-1")
	t.Logf("workers up after %v", time.Since(started).Round(time.Millisecond))

	leadDir := fleet.work("lead")
	if out, err := fleet.cli(ctx, "init", "lead", "--dir", leadDir); err != nil {
		t.Fatalf("fleetd init lead: %v\n%s", err, out)
	}
	leadHome := t.TempDir()
	if err := fakeapi.WriteClaudeHome(leadHome, leadDir); err != nil {
		t.Fatal(err)
	}
	tasks := map[string]string{"codex": "mcp task for the codex role", "gemini": "mcp task for the gemini role"}
	prompt := "delegate these"
	for _, kind := range []string{"codex", "gemini"} {
		input, _ := json.Marshal(map[string]any{"to": "role:w-" + kind, "text": tasks[kind], "timeout": "4m"})
		prompt += fmt.Sprintf(" [tool=mcp__fleetd__send:%s]", input)
	}
	cmd := exec.CommandContext(ctx, claudeBin, "-p", prompt,
		"--mcp-config", filepath.Join(leadDir, ".mcp.json"), "--strict-mcp-config", "--allowedTools", "mcp__fleetd__send")
	cmd.Dir = leadDir
	cmd.Env = fakeapi.ClaudeEnv(leadHome, fleet.api.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the lead's claude -p: %v\n%s", err, out)
	}
	t.Logf("the lead's delegation done after %v", time.Since(started).Round(time.Millisecond))

	// The lead's last request carried both tools' results: the two
	// workers' envelopes, in the order the lead called them.
	var results []fakeapi.ToolResult
	for _, r := range fleet.api.Requests() {
		if strings.HasPrefix(r.Prompt, "delegate these") && len(r.ToolResults) == 2 {
			results = r.ToolResults
		}
	}
	if results == nil {
		t.Fatalf("no request of the lead carried both send tools' results; claude said:\n%s", out)
	}
	for i, kind := range []string{"codex", "gemini"} {
		var env leadshim.Envelope
		if results[i].IsError || json.Unmarshal([]byte(results[i].Text), &env) != nil {
			t.Errorf("the %s send's result (error %v): %s", kind, results[i].IsError, results[i].Text)
			continue
		}
		want := "ECHO: " + tasks[kind]
		if env.Status != "replied" || env.Reply != want || env.Kind != kind || agentNamed(t, fleet, ctx, env.Agent).Kind != kind {
			t.Errorf("envelope of the %s send = %+v, want a %s agent's reply %q", kind, env, kind, want)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("the lead's final answer does not carry the reply %q:\n%s", want, out)
		}
	}
	// Each task went out once, as the lead's: the id init lead configured.
	log, _ := connectLog(t, fleet.up.url)
	from := map[string][]string{}
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.*.queued") {
		if q, ok := ev.Data.(events.AgentQueued); ok {
			from[q.Text] = append(from[q.Text], q.From)
		}
	}
	for kind, task := range tasks {
		if f := from[task]; len(f) != 1 || f[0] != "lead" {
			t.Errorf("turns with the %s task queued came from %v, want one, from lead", kind, f)
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
