package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// The shipped bubblewrap sandbox under the agentapi runtime: the sandbox
// wraps the agent inside agentapi (agentapi → env → bwrap → claude), the
// same launch line as in a herdr pane. The real Claude Code, sandboxed in
// its own worktree, is found ready (its hooks reach fleetd from inside the
// sandbox), a Bash tool call edits and commits in its worktree, writes
// outside it fail on a read-only file system, and a text handed over as a
// file lands in the worktree's .fleet/ and reaches the model. The agent
// is a main (an inbox role): its MCP server, `fleetd mcp`, runs inside
// the sandbox under agentapi and reaches the fleet.
func TestRealClaudeSandboxedUnderAgentapi(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	fleettest.RequireBwrap(t)
	requireAgentapi(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// Outside /tmp: the sandbox's /tmp is its own.
	dir := fleettest.OutsideTmp(t)
	repo := filepath.Join(dir, "repo")
	worktreetest.NewRepo(t, repo)
	wt := filepath.Join(dir, "data", "worktrees", "s-1")
	fleet := startAgentapiFleetIn(t, dir, []string{wt}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-box": map[string]any{
			"command":   []string{claudeBin, "--settings", "{settings}", "--allowedTools", "Bash,mcp__fleetd__roster"},
			"env_class": "gateway", "base_url": baseURL, "env": env, "tier": 1, "inbox": true,
			"worktree": map[string]any{"repo": repo, "base": "main"}, "sandbox": "bwrap",
		}}
	}, "--submit-timeout", "30s")
	if err := os.MkdirAll(filepath.Join(fleet.home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	seenUpsell(t, fleet.home)
	out, err := fleet.cli(ctx, append([]string{"spawn", "--role", "w-box", "--name", "s-1",
		"--roles", fleet.rolesFile, "--data-dir", fleet.dataDir}, fleet.runtime...)...)
	if err != nil {
		t.Fatalf("fleetd spawn: %v\n%s", err, out)
	}
	if !strings.Contains(out, "in sandbox bwrap") {
		t.Errorf("fleetd spawn does not say it sandboxed the agent:\n%s", out)
	}
	fleet.waitReady(ctx, 90*time.Second, "s-1")

	outside := filepath.Join(repo, "outside.txt")
	r := fleet.send(ctx, leadshim.Message{To: "s-1", Timeout: "2m",
		Text: "at work [tool=Bash:echo s-1 was here > shared.txt && git commit -qam s-1-edit && echo committed]" +
			" [tool=Bash:echo x > " + outside + " || echo WRITE-FAILED]"})
	if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
		t.Fatalf("the tool turn: HTTP %d %v: %s", r.status, r.err, r.body)
	}
	_, rest, _ := strings.Cut(r.env.Reply, "\nTOOL_RESULT: ")
	results := strings.Split(rest, "\nTOOL_RESULT: ")
	if len(results) != 2 || strings.TrimSpace(results[0]) != "committed" ||
		!strings.Contains(results[1], "Read-only file system") || !strings.Contains(results[1], "WRITE-FAILED") {
		t.Errorf("tool results %q, want the commit done in the worktree and the outside write refused", results)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a write outside the worktree reached %s: %v", outside, err)
	}
	if got := worktreetest.Git(t, repo, "show", "fleet/s-1:shared.txt"); got != "s-1 was here" {
		t.Errorf("fleet/s-1:shared.txt = %q", got)
	}

	// A text with a tab goes as a file in the worktree's .fleet/, which
	// the sandboxed agent reads; the model gets the hand-over.
	text := "a note\twith a tab, for the sandbox"
	r = fleet.send(ctx, leadshim.Message{To: "s-1", Text: text, Timeout: "2m"})
	if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
		t.Fatalf("the file turn: HTTP %d %v: %s", r.status, r.err, r.body)
	}
	if b, err := os.ReadFile(filepath.Join(wt, ".fleet", "inbox", r.env.ID+".md")); err != nil || !strings.Contains(string(b), text) {
		t.Errorf("the text is not in the worktree's .fleet/inbox: %v %q", err, b)
	}

	r = fleet.send(ctx, leadshim.Message{To: "s-1", Text: "who is there [tool=mcp__fleetd__roster:{}]", Timeout: "2m"})
	if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
		t.Fatalf("the roster turn: HTTP %d %v: %s", r.status, r.err, r.body)
	}
	if _, result, ok := strings.Cut(r.env.Reply, "\nTOOL_RESULT: "); !ok || !strings.Contains(result, `"agent": "s-1"`) {
		t.Errorf("s-1's reply %q: want the fleetd roster tool's result, s-1 on it", r.env.Reply)
	}
}
