package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// The real Claude Code in the shipped bubblewrap sandbox, each agent in
// its own worktree of one repository: a turn whose model answer is a
// Bash tool call edits and commits shared.txt in that agent's worktree,
// and the reply comes back through the hooks, which reach fleetd from
// inside the sandbox; the branch head after the turn is recorded. Two
// agents of one role edit the same file: each change is on its own
// branch, the other agent's worktree is not even there in its sandbox,
// and writes outside the worktree fail; a text handed over as a file in
// the worktree's .fleet/ leaves it clean. A clean role's sandboxed agent
// carries no subscription-boundary variable although herdr's environment
// leaks ANTHROPIC_BASE_URL and a key into every pane, while a gateway
// role's carries exactly its base_url. When their panes close, the
// worktrees holding work are kept and the log says why; the untouched
// one is removed.
func TestRealClaudeInABwrapSandboxWorksOnlyInItsWorktree(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	fleettest.RequireBwrap(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// Outside /tmp: the sandbox's /tmp is its own, and the repository,
	// Claude's home and fleetd's state must be seen inside.
	dir := fleettest.OutsideTmp(t)
	repo := filepath.Join(dir, "repo")
	git := func(dir string, args ...string) string {
		t.Helper()
		return worktreetest.Git(t, dir, args...)
	}
	worktreetest.NewRepo(t, repo)

	worktreeOf := func(agent string) string { return filepath.Join(dir, "data", "worktrees", agent) }
	agents := []string{"w-1", "w-2", "c-1"}
	var trusted []string
	for _, a := range agents {
		trusted = append(trusted, worktreeOf(a))
	}
	// herdr's own environment leaks another endpoint and a key into every
	// pane, as a developer's shell may.
	const leakedURL = "http://127.0.0.1:9/leaked"
	paneEnv := append(claudePaneEnv(), "ANTHROPIC_BASE_URL="+leakedURL, "ANTHROPIC_API_KEY=leaked")
	var apiURL string
	fleet := startClaudeFleetIn(t, dir, trusted, paneEnv, func(baseURL string, env map[string]string) map[string]any {
		apiURL = baseURL
		wt := map[string]any{"repo": repo, "base": "main"}
		clean := map[string]string{}
		for k, v := range env {
			if !slices.Contains(roles.BoundaryVars, k) {
				clean[k] = v
			}
		}
		return map[string]any{
			"w-box": map[string]any{
				"command":   []string{claudeBin, "--settings", "{settings}", "--allowedTools", "Bash"},
				"env_class": "gateway", "base_url": baseURL, "env": env, "cap": 2,
				"worktree": wt, "sandbox": "bwrap",
			},
			"c-box": map[string]any{
				"command":   []string{claudeBin, "--settings", "{settings}"},
				"env_class": "clean", "env": clean,
				"worktree": wt, "sandbox": "bwrap",
			},
		}
	}, "--submit-timeout", "30s")
	// The sandbox binds Claude Code's state: it must exist.
	if err := os.MkdirAll(filepath.Join(fleet.home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Claude Code 2.1.328 offers its fullscreen renderer in a dialog to
	// a home that has started it before; the agents share one home, so
	// all but the first would stop at that dialog. Say it was seen.
	seenUpsell(t, fleet.home)
	for _, a := range agents {
		role := "w-box"
		if strings.HasPrefix(a, "c-") {
			role = "c-box"
		}
		out, err := fleet.cli(ctx, "spawn", "--role", role, "--name", a,
			"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
		if err != nil {
			t.Fatalf("fleetd spawn %s: %v\n%s", a, err, out)
		}
		for _, want := range []string{"worktree " + worktreeOf(a) + " on branch fleet/" + a, "in sandbox bwrap"} {
			if !strings.Contains(out, want) {
				t.Errorf("fleetd spawn %s does not say %q:\n%s", a, want, out)
			}
		}
	}
	// Ready = the SessionStart hook ran inside the sandbox and reached
	// fleetd (a session id), and the agent is idle.
	fleet.waitReady(ctx, 90*time.Second, agents...)

	// The environment each sandboxed claude runs with, read from /proc
	// (Claude Code may have started a child process of its own as well).
	for _, a := range agents {
		for _, env := range claudeEnvirons(t, worktreeOf(a)) {
			var carried []string
			for _, k := range roles.BoundaryVars {
				if _, ok := env[k]; ok {
					carried = append(carried, k+"="+env[k])
				}
			}
			want := []string{"ANTHROPIC_BASE_URL=" + apiURL, "ANTHROPIC_AUTH_TOKEN=test"} // in BoundaryVars' order
			if a == "c-1" {
				want = nil
			}
			if !slices.Equal(carried, want) {
				t.Errorf("%s's claude carries %v, want %v", a, carried, want)
			}
			if env["FLEET_AGENT_ID"] != a || env["FLEET_WORKTREE"] != worktreeOf(a) {
				t.Errorf("%s's claude: FLEET_AGENT_ID=%q FLEET_WORKTREE=%q", a, env["FLEET_AGENT_ID"], env["FLEET_WORKTREE"])
			}
		}
	}

	// w-1 edits and commits; then w-2, which first looks at the file and
	// at w-1's worktree, edits the same file without committing. Each
	// also tries to write outside its worktree: into the repository's own
	// checkout and into Claude's home.
	turn := func(agent string, markers ...string) leadshim.Envelope {
		t.Helper()
		text := agent + " at work"
		for _, m := range markers {
			text += " [tool=Bash:" + m + "]"
		}
		r := fleet.send(ctx, leadshim.Message{To: agent, Text: text, Timeout: "2m"})
		if r.err != nil || r.status != http.StatusOK || r.env.Status != string(lifecycle.StateReplied) {
			t.Fatalf("turn for %s: HTTP %d %v: %s", agent, r.status, r.err, r.body)
		}
		t.Logf("%s replied %q", agent, r.env.Reply)
		return r.env
	}
	results := func(e leadshim.Envelope) []string {
		t.Helper()
		_, rest, ok := strings.Cut(e.Reply, "\nTOOL_RESULT: ")
		if !ok {
			t.Fatalf("%s's reply carries no tool result: %q", e.Agent, e.Reply)
		}
		return strings.Split(rest, "\nTOOL_RESULT: ")
	}
	outside := filepath.Join(repo, "outside.txt")
	inHome := filepath.Join(fleet.home, "outside.txt")
	e1 := turn("w-1", "echo w-1 was here > shared.txt && git commit -qam w-1-edit && echo committed",
		"echo x > "+outside+" || echo WRITE-FAILED", "echo x > "+inHome+" || echo WRITE-FAILED")
	r1 := results(e1)
	if len(r1) != 3 || strings.TrimSpace(r1[0]) != "committed" {
		t.Fatalf("w-1's tool results %q, want the commit done, then two outside writes", r1)
	}
	for _, r := range r1[1:] {
		if !strings.Contains(r, "Read-only file system") || !strings.Contains(r, "WRITE-FAILED") {
			t.Errorf("a write outside w-1's worktree: %q, want it refused by a read-only file system", r)
		}
	}
	e2 := turn("w-2", "cat shared.txt", "ls "+worktreeOf("w-1")+" || echo NOT-THERE",
		"echo w-2 was here > shared.txt && cat shared.txt")
	r2 := results(e2)
	if len(r2) != 3 || strings.TrimSpace(r2[0]) != "from main" || !strings.Contains(r2[1], "NOT-THERE") ||
		strings.TrimSpace(r2[2]) != "w-2 was here" {
		t.Errorf("w-2's tool results %q, want main's shared.txt, w-1's worktree absent, its own edit", r2)
	}
	for _, path := range []string{outside, inHome} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("a write outside the worktree reached %s: %v", path, err)
		}
	}

	// Both changes exist, each on its own branch; main has neither.
	if got := git(repo, "show", "fleet/w-1:shared.txt"); got != "w-1 was here" {
		t.Errorf("fleet/w-1:shared.txt = %q", got)
	}
	if got := readText(t, filepath.Join(worktreeOf("w-2"), "shared.txt")); got != "w-2 was here\n" {
		t.Errorf("w-2's shared.txt = %q", got)
	}
	if got := readText(t, filepath.Join(worktreeOf("w-1"), "shared.txt")); got != "w-1 was here\n" {
		t.Errorf("w-1's shared.txt = %q", got)
	}
	if got := readText(t, filepath.Join(repo, "shared.txt")); got != "from main\n" {
		t.Errorf("main's shared.txt = %q", got)
	}

	// A text with a tab goes to w-1 as a file in its worktree's .fleet/,
	// which git ignores: the worktree stays clean.
	e3 := fleet.send(ctx, leadshim.Message{To: "w-1", Text: "a note\twith a tab", Timeout: "2m"})
	if e3.err != nil || e3.status != http.StatusOK || e3.env.Status != string(lifecycle.StateReplied) {
		t.Fatalf("the file turn for w-1: HTTP %d %v: %s", e3.status, e3.err, e3.body)
	}
	if _, err := os.Stat(filepath.Join(worktreeOf("w-1"), ".fleet", "inbox", e3.env.ID+".md")); err != nil {
		t.Errorf("the text did not go as a file into w-1's worktree: %v", err)
	}
	if st := git(worktreeOf("w-1"), "status", "--porcelain"); st != "" {
		t.Errorf("w-1's worktree is dirty after a file delivery:\n%s", st)
	}

	// Each reply recorded where the agent's branch stood after the turn.
	log, _ := connectLog(t, fleet.up.url)
	w1 := events.Worktree{Branch: "fleet/w-1", Head: git(repo, "rev-parse", "fleet/w-1"), Ahead: 1}
	heads := map[string][]events.Worktree{
		"w-1": {w1, w1},
		"w-2": {{Branch: "fleet/w-2", Head: git(repo, "rev-parse", "main"), Dirty: 1}},
	}
	for agent, want := range heads {
		var got []events.Worktree
		for _, ev := range readEvents(t, ctx, log, "fleet.agent."+agent+".replied") {
			w := ev.Data.(events.AgentReplied).Worktree
			got = append(got, events.Worktree{Branch: w.Branch, Head: w.Head, Ahead: w.Ahead, Dirty: w.Dirty})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s's replied events record %+v, want %+v", agent, got, want)
		}
	}
	// The agents' panes are closed, as the session reaper closes them:
	// each exit says what became of its worktree. w-2's holds an
	// uncommitted edit and w-1's an unmerged commit: both are kept, and
	// the log says why; c-1's, untouched, goes with its branch.
	roster, err := fleet.roster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hc := herdrapi.New(fleet.herdr.Path())
	for _, a := range agents {
		ag, _ := findAgent(roster, a)
		if err := hc.ClosePane(ctx, ag.Pane); err != nil {
			t.Fatalf("close %s's pane %s: %v", a, ag.Pane, err)
		}
	}
	kept := map[string]string{"w-1": "1 commit neither merged into main nor pushed", "w-2": "1 uncommitted file", "c-1": ""}
	checkfor.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		for a := range kept {
			if len(readEvents(t, ctx, log, "fleet.agent."+a+".exited")) == 0 {
				return fmt.Errorf("%s has not exited yet", a)
			}
		}
		return nil
	})
	for a, why := range kept {
		exits := readEvents(t, ctx, log, "fleet.agent."+a+".exited")
		w := exits[0].Data.(events.AgentExited).Worktree
		if len(exits) != 1 || w.Path != worktreeOf(a) || w.Kept != why || w.Removed != (why == "") {
			t.Errorf("%s's exit: %d events, worktree %+v, want it kept for %q", a, len(exits), w, why)
		}
		_, err := os.Stat(worktreeOf(a))
		if gone := os.IsNotExist(err); gone != (why == "") {
			t.Errorf("%s's worktree gone=%t, want %t", a, gone, why == "")
		}
	}
	if got := readText(t, filepath.Join(worktreeOf("w-2"), "shared.txt")); got != "w-2 was here\n" {
		t.Errorf("w-2's kept worktree lost its edit: %q", got)
	}
	out, err := fleet.cli(ctx, "tail", "--since", "all", "--no-follow")
	if err != nil {
		t.Fatalf("fleetd tail: %v\n%s", err, out)
	}
	for _, want := range []string{"worktree " + worktreeOf("w-2") + " KEPT: 1 uncommitted file",
		"worktree " + worktreeOf("w-1") + " KEPT: 1 commit neither merged", "worktree " + worktreeOf("c-1") + " removed"} {
		if !strings.Contains(out, want) {
			t.Errorf("fleetd tail does not say %q:\n%s", want, out)
		}
	}

	// No pane was found crossing its boundary: the sandbox wrapper drops
	// what herdr leaks before anything of the agent's runs.
	for _, a := range agents {
		for _, ev := range readEvents(t, ctx, log, "fleet.agent."+a+".status") {
			if d := ev.Data.(events.AgentStatusChanged); d.Violation != "" {
				t.Errorf("%s: boundary violation reported: %s", a, d.Violation)
			}
		}
	}
}

// claudeEnvirons are the environments of the claude processes working in
// dir, read from /proc: the sandbox has its own view of processes inside,
// but the host sees them all. At least one must be there.
func claudeEnvirons(t *testing.T, dir string) []map[string]string {
	t.Helper()
	links, _ := filepath.Glob("/proc/[0-9]*/cwd")
	var found []map[string]string
	for _, l := range links {
		if cwd, err := os.Readlink(l); err != nil || cwd != dir {
			continue
		}
		proc := filepath.Dir(l)
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil || !strings.Contains(filepath.Base(strings.Split(string(cmdline), "\x00")[0]), "claude") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(proc, "environ"))
		if err != nil {
			continue
		}
		env := map[string]string{}
		for kv := range strings.SplitSeq(string(raw), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		found = append(found, env)
	}
	if len(found) == 0 {
		t.Fatalf("no claude process in %s", dir)
	}
	return found
}

// seenUpsell records in home/.claude.json that Claude Code's fullscreen
// renderer offer was seen as often as it is made.
func seenUpsell(t *testing.T, home string) {
	t.Helper()
	path := filepath.Join(home, ".claude.json")
	var cfg map[string]any
	if err := json.Unmarshal([]byte(readText(t, path)), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["fullscreenUpsellSeenCount"] = 3
	writeJSONFile(t, path, cfg)
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
