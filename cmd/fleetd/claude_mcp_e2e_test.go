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

// The real Claude Code as the MCP client: a lead whose MCP config is the
// .mcp.json `fleetd init lead` wrote runs `fleetd mcp`; the fake API
// answers its prompt with a tool_use of the fleetd send tool; fleetd
// delivers the task to a real Claude Code worker; and the tool result the
// lead's Claude Code sends back to the API carries the worker's reply.
func TestRealClaudeLeadDelegatesThroughFleetdMCP(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work-1", "lead"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-local": claudeRole(claudeBin, baseURL, env, map[string]any{
			"description": "a real Claude Code worker against the fake API",
		})}
	}, "--submit-timeout", "30s")
	fleet.spawn(ctx, "w-1", "w-local", "work-1")
	fleet.waitReady(ctx, 60*time.Second, "w-1")

	leadDir := fleet.work("lead")
	if out, err := fleet.cli(ctx, "init", "lead", "--dir", leadDir); err != nil {
		t.Fatalf("fleetd init lead: %v\n%s", err, out)
	}
	leadHome := t.TempDir()
	if err := fakeapi.WriteClaudeHome(leadHome, leadDir); err != nil {
		t.Fatal(err)
	}
	task := "mcp hello from the lead"
	input, _ := json.Marshal(map[string]any{"to": "w-1", "text": task, "timeout": "2m"})
	prompt := fmt.Sprintf("delegate this [tool=mcp__fleetd__send:%s]", input)
	cmd := exec.CommandContext(ctx, claudeBin, "-p", prompt,
		"--mcp-config", filepath.Join(leadDir, ".mcp.json"), "--strict-mcp-config", "--allowedTools", "mcp__fleetd__send")
	cmd.Dir = leadDir
	cmd.Env = fakeapi.ClaudeEnv(leadHome, fleet.api.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the lead's claude -p: %v\n%s", err, out)
	}

	// The lead's Claude Code handed the tool's result back to the model:
	// the worker's envelope, its reply the worker's real Stop hook carried.
	want := "ECHO: " + task
	var result *fakeapi.ToolResult
	for _, r := range fleet.api.Requests() {
		if strings.HasPrefix(r.Prompt, "delegate this") && len(r.ToolResults) == 1 {
			result = &r.ToolResults[0]
		}
	}
	if result == nil {
		t.Fatalf("no request of the lead carried the send tool's result; claude said:\n%s", out)
	}
	var env leadshim.Envelope
	if result.IsError || json.Unmarshal([]byte(result.Text), &env) != nil {
		t.Fatalf("the send tool's result (error %v): %s", result.IsError, result.Text)
	}
	if env.Agent != "w-1" || env.Status != "replied" || env.Reply != want {
		t.Errorf("envelope in the tool result = %+v, want w-1 replied %q", env, want)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("the lead's final answer does not carry the reply %q:\n%s", want, out)
	}
	// The turn went out as the lead's: the id init lead configured.
	log, _ := connectLog(t, fleet.up.url)
	var from []string
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.w-1.queued") {
		if q, ok := ev.Data.(events.AgentQueued); ok && q.Text == task {
			from = append(from, q.From)
		}
	}
	if len(from) != 1 || from[0] != "lead" {
		t.Errorf("turns with the task queued for w-1 came from %v, want one, from lead", from)
	}
}
