package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// sandboxKind is one kind of agent the sandbox test runs: its role (the
// kind's own test helper, the real CLI against the fake API), and how the
// fake model asks its CLI to run a shell command.
type sandboxKind struct {
	kind, agent string
	role        func(baseURL string, env map[string]string) map[string]any
	// shell is the tool marker that has the CLI run command, given the
	// requests the model got so far (which name the CLI's tools).
	shell func(command string, seen []fakeapi.Request) string
}

// Every other kind than Claude Code in the shipped bubblewrap sandbox,
// each agent in its own worktree of one repository, as the Claude Code
// agent in TestRealClaudeInABwrapSandboxWorksOnlyInItsWorktree: its hooks
// (Codex's and Gemini's hooks, OpenCode's plugin, Pi's extension) reach
// fleetd from inside, so it is ready and replies; a turn whose model
// answer is a shell tool call writes a file in its worktree, which
// reaches the host, while a write into the repository's own checkout or
// its home fails on a read-only file system and fleetd's data dir holds
// neither another agent's worktree nor another kind's config home; its
// own config home (where its CLI writes its sessions) is writable, and
// fleetd's hook file there is not. Killed, it comes back in its sandbox
// and resumes its conversation: the next request carries the first turn.
func TestRealSandboxedAgentsOfEveryKindWorkOnlyInTheirWorktrees(t *testing.T) {
	fleettest.RequireBwrap(t)
	var kinds []sandboxKind
	dollarJSON := func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) }
	if bin, ok := lookCLI(t, fakeapi.RequireCodex); ok {
		kinds = append(kinds, sandboxKind{kind: "codex", agent: "cx-1",
			role: func(baseURL string, env map[string]string) map[string]any {
				// Codex's own sandbox and approvals off: fleetd's
				// sandbox is what confines it here, and a command
				// never waits for a person.
				return codexRole(bin, baseURL, env, map[string]any{
					"command": []string{bin, "-c", "sandbox_mode=danger-full-access", "-c", "approval_policy=never", "{resume}"}})
			},
			shell: func(c string, seen []fakeapi.Request) string {
				// Codex offers exec_command or shell, by model.
				for _, req := range seen {
					if bytes.Contains(req.Body, []byte(`"name":"exec_command"`)) {
						return "[tool=exec_command:" + dollarJSON(map[string]any{"cmd": c}) + "]"
					}
				}
				return "[tool=shell:" + dollarJSON(map[string]any{"command": []string{"bash", "-c", c}}) + "]"
			}})
	}
	// Outside /tmp: the sandbox's /tmp is its own, and the repository,
	// the home and fleetd's state must be seen inside.
	dir := fleettest.OutsideTmp(t)
	geminiPolicy := filepath.Join(dir, "gemini-policy.toml")
	if err := os.WriteFile(geminiPolicy, []byte("[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"allow\"\nallowRedirection = true\npriority = 900\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if bin, ok := lookCLI(t, fakeapi.RequireGemini); ok {
		kinds = append(kinds, sandboxKind{kind: "gemini", agent: "gm-1",
			role: func(baseURL string, env map[string]string) map[string]any {
				// A shell command runs without a dialog: a policy of
				// the test's allows it (--yolo would too, but fleetd
				// does not read YOLO mode's composer).
				return geminiRole(bin, baseURL, env, map[string]any{"command": []string{bin, "{resume}", "--policy", geminiPolicy}})
			},
			shell: func(c string, _ []fakeapi.Request) string {
				return "[tool=run_shell_command:" + dollarJSON(map[string]any{"command": c}) + "]"
			}})
	}
	if bin, ok := lookCLI(t, fakeapi.RequireOpenCode); ok {
		kinds = append(kinds, sandboxKind{kind: "opencode", agent: "oc-1",
			role: func(baseURL string, env map[string]string) map[string]any {
				return openCodeRole(bin, baseURL, env, nil)
			},
			shell: func(c string, _ []fakeapi.Request) string {
				return "[tool=bash:" + dollarJSON(map[string]any{"command": c, "description": "run it"}) + "]"
			}})
	}
	if bin, ok := lookCLI(t, fakeapi.RequirePi); ok {
		kinds = append(kinds, sandboxKind{kind: "pi", agent: "pi-1",
			role: func(baseURL string, env map[string]string) map[string]any { return piRole(bin, baseURL, env, nil) },
			shell: func(c string, _ []fakeapi.Request) string {
				return "[tool=bash:" + dollarJSON(map[string]any{"command": c}) + "]"
			}})
	}
	if len(kinds) == 0 {
		t.Skip("none of codex, gemini, opencode, pi is on PATH")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	started := time.Now()

	repo := filepath.Join(dir, "repo")
	worktreetest.NewRepo(t, repo)
	dataDir := filepath.Join(dir, "data")
	worktreeOf := func(agent string) string { return filepath.Join(dataDir, "worktrees", agent) }
	var trusted []string
	for _, k := range kinds {
		trusted = append(trusted, worktreeOf(k.agent))
	}
	fleet := startClaudeFleetIn(t, dir, trusted, claudePaneEnv(), func(baseURL string, env map[string]string) map[string]any {
		rs := map[string]any{}
		for _, k := range kinds {
			r := k.role(baseURL, env)
			r["worktree"] = map[string]any{"repo": repo, "base": "main"}
			r["sandbox"] = "bwrap"
			r["restart"], r["restart_backoff"] = "on-failure", "200ms"
			rs["w-"+k.kind] = r
		}
		return rs
	}, "--submit-timeout", "30s")
	seedOpenCodeGlobalConfig(t, fleet.home)
	// OpenCode asks before a command touches a path outside its project:
	// allowed here, so the sandbox is what refuses the write.
	writeJSONFile(t, filepath.Join(fleet.home, ".config", "opencode", "opencode.json"),
		map[string]any{"permission": map[string]any{"bash": "allow", "edit": "allow", "external_directory": "allow"}})

	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			kindStarted := time.Now()
			// Spawned at once (a kind whose session starts with its
			// first prompt shows no session yet): the first send waits
			// for it.
			spawnCtx, spawnCancel := context.WithTimeout(ctx, 3*time.Minute)
			spawn := exec.CommandContext(spawnCtx, fleetdBin, "spawn", "--role", "w-"+k.kind, "--name", k.agent, "--no-wait",
				"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
			spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(),
				"FLEET_NATS_URL="+fleet.up.url, "FLEET_URL="+fleet.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
			out, err := spawn.CombinedOutput()
			spawnCancel()
			if err != nil {
				t.Fatalf("fleetd spawn %s: %v\n%s", k.agent, err, out)
			}
			for _, want := range []string{"worktree " + worktreeOf(k.agent) + " on branch fleet/" + k.agent, "in sandbox bwrap"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("fleetd spawn %s does not say %q:\n%s", k.agent, want, out)
				}
			}
			t.Logf("%s spawned after %v", k.agent, time.Since(kindStarted).Round(time.Millisecond))
			first := "hello " + k.kind + " in your sandbox"
			r := fleet.send(ctx, leadshim.Message{To: k.agent, Text: first, Timeout: "3m"})
			if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) || r.env.Reply != "ECHO: "+first {
				t.Fatalf("the first turn of %s: HTTP %d %v: %s", k.agent, r.status, r.err, r.body)
			}
			t.Logf("%s replied after %v", k.agent, time.Since(kindStarted).Round(time.Millisecond))

			// Its shell tool, inside the sandbox: a write in its
			// worktree; writes into the repository's checkout and the
			// home; fleetd's data dir (other agents' worktrees, fleetd's
			// launchers); its own config home, and fleetd's hook file
			// there. Each path relative to its worktree, where the
			// command runs: a short text keeps on one row of the
			// composer (on a loaded machine Gemini has taken the Enter
			// after a wrapped paste for a newline).
			own := ownConfig(dataDir, k.kind, k.agent)
			outside, inHome := filepath.Join(repo, "outside-"+k.kind+".txt"), filepath.Join(fleet.home, "outside-"+k.kind+".txt")
			rel := func(path string) string {
				r, err := filepath.Rel(worktreeOf(k.agent), path)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			commands := []string{
				"echo " + k.kind + " was here > mine.txt && cat mine.txt",
				"echo x > " + rel(outside) + " || echo WRITE-FAILED",
				"echo x > " + rel(inHome) + " || echo WRITE-FAILED",
				"ls " + rel(filepath.Join(dataDir, "worktrees")) + " && ls " + rel(filepath.Join(dataDir, "launch")) + " || echo NOT-THERE",
				"touch " + rel(own.dir) + "/sandbox-probe && echo CONFIG-WRITABLE",
				"echo x >> " + rel(own.hooks) + " || echo HOOKS-READ-ONLY",
			}
			// One command a turn: a longer text may go as a file
			// (Codex types at most 1 KiB), whose markers the fake
			// model would not see.
			var results []string
			for _, c := range commands {
				r = fleet.send(ctx, leadshim.Message{To: k.agent, Text: "run this " + k.shell(c, fleet.api.Requests()), Timeout: "3m"})
				if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
					t.Fatalf("the tool turn of %s: HTTP %d %v: %s", k.agent, r.status, r.err, r.body)
				}
				_, result, ok := strings.Cut(r.env.Reply, "\nTOOL_RESULT: ")
				if !ok {
					t.Fatalf("%s ran no tool for %q: %q", k.agent, c, r.env.Reply)
				}
				results = append(results, result)
			}
			t.Logf("%s's tool results: %q", k.agent, results)
			for i, want := range []string{k.kind + " was here", "Read-only file system", "Read-only file system", "NOT-THERE", "CONFIG-WRITABLE", "Read-only file system"} {
				if !strings.Contains(results[i], want) {
					t.Errorf("%s: %q gave %q, want %q in it", k.agent, commands[i], results[i], want)
				}
			}
			// Of fleetd's data dir it sees its own worktree only: no
			// other agent's, not the launchers fleetd writes there.
			if _, err := os.Stat(filepath.Join(dataDir, "launch")); err != nil {
				t.Errorf("fleetd's launchers are not where the sandbox was asked about: %v", err)
			}
			if !strings.Contains(results[3], k.agent) {
				t.Errorf("%s does not see its own worktree in fleetd's data dir: %q", k.agent, results[3])
			}
			for _, o := range kinds {
				if o.agent != k.agent && strings.Contains(results[3], o.agent) {
					t.Errorf("%s sees %s's worktree: %q", k.agent, o.agent, results[3])
				}
			}
			if got := readText(t, filepath.Join(worktreeOf(k.agent), "mine.txt")); got != k.kind+" was here\n" {
				t.Errorf("%s's write in its worktree reached the host as %q", k.agent, got)
			}
			for _, path := range []string{outside, inHome} {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("%s's write outside its worktree reached %s: %v", k.agent, path, err)
				}
			}
			if _, err := os.Stat(filepath.Join(own.dir, "sandbox-probe")); err != nil {
				t.Errorf("%s's write in its config home did not reach the host: %v", k.agent, err)
			}

			// Killed: it comes back in a new pane, in its sandbox,
			// resuming its conversation.
			before := agentNamed(t, fleet, ctx, k.agent)
			fleet.killClaude(t, before.Pane)
			checkfor.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
				a := agentNamed(t, fleet, ctx, k.agent)
				if a.Restarts != 1 || a.Pane == before.Pane || !a.Ready() {
					return fmt.Errorf("%s not ready after its restart: %+v", k.agent, a)
				}
				return nil
			})
			recall := "which words did I send first, " + k.kind + "?"
			if r := fleet.send(ctx, leadshim.Message{To: k.agent, Text: recall, Timeout: "3m"}); r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
				t.Fatalf("the turn of %s after its restart: HTTP %d %s", k.agent, r.status, r.body)
			}
			var resumed bool
			for _, req := range fleet.api.Requests() {
				if req.Prompt == recall && bytes.Contains(req.Body, []byte(first)) {
					resumed = true
				}
			}
			if !resumed {
				t.Errorf("the request for %q does not carry %s's conversation from before the restart", recall, k.agent)
			}
			if a := agentNamed(t, fleet, ctx, k.agent); a.Sandbox != "bwrap" {
				t.Errorf("%s came back outside its sandbox: %+v", k.agent, a)
			}
			t.Logf("%s done in %v", k.agent, time.Since(kindStarted).Round(time.Millisecond))
		})
	}

	// No pane was found crossing its kind's boundary.
	log, _ := connectLog(t, fleet.up.url)
	for _, k := range kinds {
		for _, ev := range readEvents(t, ctx, log, "fleet.agent."+k.agent+".status") {
			if d := ev.Data.(events.AgentStatusChanged); d.Violation != "" {
				t.Errorf("%s: boundary violation reported: %s", k.agent, d.Violation)
			}
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}

// lookCLI is a kind's real CLI when it is on PATH: its Require… would
// skip the whole test without it, and here the kinds there are run.
func lookCLI(t *testing.T, require func(fakeapi.TB) string) (string, bool) {
	p := &cliProbe{T: t}
	bin := require(p)
	if p.fatal != "" {
		t.Fatal(p.fatal)
	}
	if p.skip != "" {
		t.Log(p.skip)
	}
	return bin, bin != "" && p.skip == ""
}

// cliProbe is a test whose Skip and Fatal are only recorded.
type cliProbe struct {
	*testing.T
	skip, fatal string
}

func (p *cliProbe) Skip(args ...any)                  { p.skip = fmt.Sprint(args...) }
func (p *cliProbe) Fatal(args ...any)                 { p.fatal = fmt.Sprint(args...) }
func (p *cliProbe) Fatalf(format string, args ...any) { p.fatal = fmt.Sprintf(format, args...) }

// configHome is where fleetd keeps a kind's agent's own config (its
// directory in fleetd's data dir), and fleetd's hook file there.
type configHome struct{ dir, hooks string }

func ownConfig(dataDir, kind, agent string) configHome {
	switch kind {
	case "codex":
		d := filepath.Join(dataDir, "codex", agent)
		return configHome{d, filepath.Join(d, "hooks.json")}
	case "gemini":
		d := filepath.Join(dataDir, "gemini", agent)
		return configHome{d, filepath.Join(d, ".gemini", "settings.json")}
	case "opencode":
		d := filepath.Join(dataDir, "opencode", agent)
		return configHome{d, filepath.Join(d, "plugins", "fleetd.js")}
	default:
		d := filepath.Join(dataDir, "pi", "agents", agent)
		return configHome{d, filepath.Join(d, "extensions", "fleetd.ts")}
	}
}
