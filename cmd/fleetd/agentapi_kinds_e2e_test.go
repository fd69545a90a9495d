package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// agentapiKind is one kind of agent CLI as TestRealKindsUnderAgentapi
// drives it under agentapi: its role, and the delivery its own herdr test
// measured for the kind's mode character (the engine is the same under
// both runtimes, so the delivery must be too).
type agentapiKind struct {
	kind string
	role func(t *testing.T, baseURL string, env map[string]string) map[string]any
	// bang is the kind's shell-mode text and its delivery.
	bang, bangDelivery string
	// seed prepares the fleet's home before the agent starts.
	seed func(t *testing.T, home string)
}

// The real Codex, Gemini CLI, OpenCode and Pi under agentapi, driven by
// fleetd's one delivery engine through the agentapi runtime, as
// TestRealClaudeUnderAgentapi drives Claude Code: plain, multi-line,
// non-ASCII, the kind's shell-mode character and 100 KB texts each reach
// the model exactly as under herdr (the same delivery), a canary after
// each; no text runs a shell command; the agent's process killed, it is
// restarted under its role's policy and resumes its conversation.
func TestRealKindsUnderAgentapi(t *testing.T) {
	policy := map[string]any{"restart": "on-failure", "restart_backoff": "200ms"}
	kinds := []agentapiKind{
		{kind: "codex", bang: "!touch PWNED-cx-bang.txt", bangDelivery: "file",
			role: func(t *testing.T, baseURL string, env map[string]string) map[string]any {
				return codexRole(fakeapi.RequireCodex(t), baseURL, env, policy)
			}},
		// Pasted, "!" is text to Gemini: only a typed "!" is its shell mode.
		{kind: "gemini", bang: "!touch PWNED-gm-bang.txt", bangDelivery: "paste",
			role: func(t *testing.T, baseURL string, env map[string]string) map[string]any {
				return geminiRole(fakeapi.RequireGemini(t), baseURL, env, policy)
			}},
		{kind: "opencode", bang: "!touch PWNED-oc-bang.txt", bangDelivery: "paste",
			role: func(t *testing.T, baseURL string, env map[string]string) map[string]any {
				return openCodeRole(fakeapi.RequireOpenCode(t), baseURL, env, policy)
			},
			seed: seedOpenCodeGlobalConfig},
		{kind: "pi", bang: "!touch PWNED-pi-bang.txt", bangDelivery: "file",
			role: func(t *testing.T, baseURL string, env map[string]string) map[string]any {
				return piRole(fakeapi.RequirePi(t), baseURL, env, policy)
			}},
	}
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) { runKindUnderAgentapi(t, k) })
	}
}

func runKindUnderAgentapi(t *testing.T, k agentapiKind) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	started := time.Now()
	// The role is made (and the kind's CLI required, skipping or failing
	// as its herdr test does) before the fleet starts anything.
	fleet := startAgentapiFleet(t, []string{"work"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-" + k.kind: k.role(t, baseURL, env)}
	}, "--submit-timeout", "30s")
	if k.seed != nil {
		k.seed(t, fleet.home)
	}
	log, _ := connectLog(t, fleet.up.url)
	// --no-wait, then the roster, as the kinds' herdr tests do: a kind
	// whose session starts with its first prompt is still waited for
	// until its composer shows (StartupGrace), and OpenCode had not drawn
	// it 30 s after its launch (fleet.cli's limit) on a loaded machine.
	spawnCtx, spawnCancel := context.WithTimeout(ctx, 3*time.Minute)
	spawn := exec.CommandContext(spawnCtx, fleetdBin, append([]string{"spawn", "--role", "w-" + k.kind, "--name", "a-1", "--cwd", fleet.work("work"), "--no-wait",
		"--roles", fleet.rolesFile, "--data-dir", fleet.dataDir}, fleet.runtime...)...)
	spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(),
		"FLEET_NATS_URL="+fleet.up.url, "FLEET_URL="+fleet.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
	out, err := spawn.CombinedOutput()
	spawnCancel()
	if err != nil {
		t.Fatalf("fleetd spawn a-1: %v\n%s", err, out)
	}
	// Ready: idle with its prompt box up, and its session started — but a
	// kind whose session starts with its first prompt (Codex, OpenCode)
	// has no session before it.
	kind, err := herdrbridge.KindOf(k.kind)
	if err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
		if a := agentNamed(t, fleet, ctx, "a-1"); !a.Ready() || (a.SessionID == "" && !kind.LazySession()) {
			return fmt.Errorf("a-1 not ready yet: %+v", a)
		}
		return nil
	})
	if a := agentNamed(t, fleet, ctx, "a-1"); a.Kind != k.kind {
		t.Errorf("a-1's kind on the roster: %q, want %s", a.Kind, k.kind)
	}
	t.Logf("%s ready under agentapi after %v", k.kind, time.Since(started).Round(time.Millisecond))

	// The first turn, outside the table: OpenCode also sends a session's
	// first prompt in its title call, which the table would count as a
	// second delivery. It is the context the resumed agent must carry.
	remember := "remember the word PERSIMMON"
	if r := fleet.send(ctx, leadshim.Message{To: "a-1", Text: remember, Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: "+remember {
		t.Fatalf("the first turn: HTTP %d %s", r.status, r.body)
	}

	fleet.textTable(ctx, log, "a-1", fleet.work("work"), []textCase{
		{name: "plain text", text: "hello " + k.kind + " under agentapi", status: 200, delivery: "paste"},
		{name: "two lines", text: "first line\nsecond line", status: 200, delivery: "paste"},
		{name: "non-ASCII", text: "naïve café — 日本語 ✓ 🎉", status: 200, delivery: "paste"},
		{name: "a leading bang (shell mode)", text: k.bang, status: 200, delivery: k.bangDelivery},
		{name: "a 100 KB text", text: strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100<<10/44) + "end.", status: 200, delivery: "file"},
	})
	if marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*")); len(marks) > 0 {
		t.Errorf("a shell command ran: %v", marks)
	}
	t.Logf("%s texts done after %v", k.kind, time.Since(started).Round(time.Millisecond))

	// The agent's process killed while idle: restarted under its role's
	// policy in a new pane (a new agentapi server), resuming its session.
	before := agentNamed(t, fleet, ctx, "a-1")
	fleet.killClaude(t, before.Pane)
	var after projections.Agent
	checkfor.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
		after = agentNamed(t, fleet, ctx, "a-1")
		if after.Restarts != 1 || after.Pane == before.Pane || !after.Ready() {
			return fmt.Errorf("a-1 not ready after its restart: %+v", after)
		}
		return nil
	})
	recall := "which word did I ask you to remember?"
	if r := fleet.send(ctx, leadshim.Message{To: "a-1", Text: recall, Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: "+recall {
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
	t.Logf("%s done in %v", k.kind, time.Since(started).Round(time.Millisecond))
}
