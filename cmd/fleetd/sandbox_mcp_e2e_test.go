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

// A main (an inbox role) that fleetd spawns into the shipped bubblewrap
// sandbox gets the fleetd MCP server with no set-up of its own: its real
// Claude Code, told by the fake API to call the fleetd roster tool, runs
// `fleetd mcp` from the config the bridge wrote into the state directory
// (which the sandbox hides but for that file), the server reaches the
// shim from inside, and the tool's result — the roster, the main itself
// on it — comes back in the main's reply.
func TestASandboxedMainReachesTheFleetThroughFleetdMCP(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	fleettest.RequireBwrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	dir := fleettest.OutsideTmp(t)
	repo := filepath.Join(dir, "repo")
	worktreetest.NewRepo(t, repo)
	worktree := filepath.Join(dir, "data", "worktrees", "main-1")
	fleet := startClaudeFleetIn(t, dir, []string{worktree}, claudePaneEnv(), func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"m-box": map[string]any{
			"command":   []string{claudeBin, "--settings", "{settings}", "--allowedTools", "mcp__fleetd__roster"},
			"env_class": "gateway", "base_url": baseURL, "env": env, "tier": 1, "inbox": true,
			"worktree": map[string]any{"repo": repo}, "sandbox": "bwrap",
		}}
	}, "--submit-timeout", "30s")
	if err := os.MkdirAll(filepath.Join(fleet.home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	seenUpsell(t, fleet.home)
	out, err := fleet.cli(ctx, "spawn", "--role", "m-box", "--name", "main-1",
		"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
	if err != nil || !strings.Contains(out, "in sandbox bwrap") {
		t.Fatalf("fleetd spawn main-1: %v\n%s", err, out)
	}
	mcpConfig := filepath.Join(fleet.dataDir, "mcp", "main-1.json")
	if cfg := readText(t, mcpConfig); !strings.Contains(cfg, `"main-1"`) {
		t.Errorf("main-1's MCP config:\n%s", cfg)
	}
	fleet.waitReady(ctx, 90*time.Second, "main-1")

	r := fleet.send(ctx, leadshim.Message{To: "main-1", Text: "who is there [tool=mcp__fleetd__roster:{}]", Timeout: "2m"})
	if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
		t.Fatalf("turn for main-1: HTTP %d %v: %s", r.status, r.err, r.body)
	}
	t.Logf("main-1 replied %q", r.env.Reply)
	_, result, ok := strings.Cut(r.env.Reply, "\nTOOL_RESULT: ")
	if !ok || !strings.Contains(result, `"agent": "main-1"`) || !strings.Contains(result, `"role": "m-box"`) {
		t.Errorf("main-1's reply %q: want the roster tool's result, main-1 on it", r.env.Reply)
	}
}
