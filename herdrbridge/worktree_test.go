package herdrbridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/worktree"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// wtFleet is a fleet whose roles give agents worktrees of a test
// repository (branch main, one commit with shared.txt), and sandboxes.
type wtFleet struct {
	*fleet
	repo, state string
	roles       roles.Config
}

// agentScript is the command of the test roles' agents: it says where it
// runs and what it was told, then waits.
const agentScript = `echo LAUNCHED $FLEET_AGENT_ID in $(pwd) wt=$FLEET_WORKTREE base=$FLEET_WORKTREE_BASE; exec sleep 60`

func newWTFleet(t *testing.T) *wtFleet {
	t.Helper()
	f := &wtFleet{fleet: newFleet(t), repo: filepath.Join(t.TempDir(), "repo"), state: t.TempDir()}
	worktreetest.NewRepo(t, f.repo)
	rc, err := roles.Parse(fmt.Appendf(nil, `{
	  "sandboxes": {
	    "sh-box": {"launch": ["sh", "-c", "exec \"$@\"", "box", "{command}"]},
	    "broken": {"launch": ["sh", "-c", "echo the sandbox says no >&2; exit 3", "box", "{command}"]},
	    "needs-spool": {"launch": ["sh", "-c", "exec \"$@\"", "{spool}", "{command}"]}
	  },
	  "roles": {
	    "w-wt": {"command": ["sh", "-c", %[1]q], "worktree": {"repo": %[2]q, "base": "main"}},
	    "w-box": {"command": ["sh", "-c", %[1]q], "worktree": {"repo": %[2]q}, "sandbox": "sh-box"},
	    "w-broken": {"command": ["sh", "-c", %[1]q], "worktree": {"repo": %[2]q}, "sandbox": "broken"},
	    "w-nospool": {"command": ["sh", "-c", %[1]q], "worktree": {"repo": %[2]q}, "sandbox": "needs-spool"},
	    "w-norepo": {"command": ["sh", "-c", %[1]q], "worktree": {"repo": %[3]q}}
	  }}`, agentScript, f.repo, filepath.Join(f.state, "no-such-repo")))
	if err != nil {
		t.Fatal(err)
	}
	f.roles = rc
	if err := os.WriteFile(filepath.Join(f.state, "claude-settings.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *wtFleet) config(c *herdrbridge.BridgeConfig) {
	c.Roles = f.roles
	c.Launch = herdrbridge.Launch{StateDir: f.state, SpoolDir: filepath.Join(f.state, "spool"), Settings: filepath.Join(f.state, "claude-settings.json"), Fleetd: "/bin/true"}
	c.SandboxStartWait = 10 * time.Second
}

func (f *wtFleet) git(dir string, args ...string) string {
	f.t.Helper()
	return worktreetest.Git(f.t, dir, args...)
}

func (f *wtFleet) write(dir, name, text string) {
	f.t.Helper()
	worktreetest.Write(f.t, dir, name, text)
}

func (f *wtFleet) worktreePath(name string) string { return filepath.Join(f.state, "worktrees", name) }

// nothingLeft checks that a failed spawn of agent left no pane, no
// worktree and no branch behind.
func (f *wtFleet) nothingLeft(agent string) {
	f.t.Helper()
	if snap, err := f.client.Snapshot(context.Background()); err != nil || len(snap.Panes) != 0 {
		f.t.Errorf("panes left: %+v %v", snap.Panes, err)
	}
	if _, err := os.Stat(f.worktreePath(agent)); !errors.Is(err, os.ErrNotExist) {
		f.t.Errorf("worktree left: %v", err)
	}
	if b := f.git(f.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/fleet/"); b != "" {
		f.t.Errorf("branches left: %s", b)
	}
}

// Each agent of a worktree role starts in its own worktree, on its own
// branch from the base, told where it is; spawned again after its exit,
// it gets the same worktree back with its work.
func TestSpawnGivesEachAgentItsOwnWorktree(t *testing.T) {
	f := newWTFleet(t)
	b := f.newBridge(f.config)
	ctx := context.Background()
	main := f.git(f.repo, "rev-parse", "main")
	regs := map[string]events.AgentRegistered{}
	for _, name := range []string{"w-1", "w-2"} {
		reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-wt", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		regs[name] = reg
		path := f.worktreePath(name)
		want := events.Worktree{Repo: f.repo, Path: path, Branch: "fleet/" + name, Base: "main", Head: main}
		if reg.Worktree != want || reg.Cwd != path {
			t.Errorf("%s registered with %+v in %s, want %+v", name, reg.Worktree, reg.Cwd, want)
		}
		f.waitOutput(reg.Pane, fmt.Sprintf("LAUNCHED %s in %s wt=%s base=main", name, path, path))
	}

	// w-1 leaves work behind and exits; spawned again, it continues.
	f.write(f.worktreePath("w-1"), "shared.txt", "w-1 was here\n")
	f.add("w-1", events.AgentExited{Pane: regs["w-1"].Pane, Reason: "test"}, "")
	if err := f.client.ClosePane(ctx, regs["w-1"].Pane); err != nil {
		t.Fatal(err)
	}
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-wt", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Worktree.Path != f.worktreePath("w-1") || reg.Worktree.Dirty != 1 {
		t.Errorf("spawned again: %+v, want its worktree back with its one changed file", reg.Worktree)
	}
	if got, _ := os.ReadFile(filepath.Join(reg.Worktree.Path, "shared.txt")); string(got) != "w-1 was here\n" {
		t.Errorf("shared.txt = %q", got)
	}
	// The agents of a named session share one: the session's.
	for _, name := range []string{"s-1", "s-2"} {
		reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-wt", Name: name, Session: "sess"})
		if err != nil {
			t.Fatal(err)
		}
		if reg.Worktree.Path != f.worktreePath("sess") || reg.Worktree.Branch != "fleet/sess" {
			t.Errorf("%s of session sess: %+v", name, reg.Worktree)
		}
	}
}

// A spawn that cannot be carried out says why and leaves nothing: no
// pane, no worktree, no branch, and either no event or, when the launch
// failed after the registration, the registration closed by an exit.
func TestASpawnThatCannotStartLeavesNothingBehind(t *testing.T) {
	tests := []struct {
		name    string
		req     herdrbridge.SpawnRequest
		before  func(f *wtFleet)
		launch  func(l *herdrbridge.Launch)
		want    error
		says    []string
		exitLog bool // registered, then exited
	}{
		{name: "a missing repo", req: herdrbridge.SpawnRequest{Role: "w-norepo", Name: "w-1"}, want: worktree.ErrNoRepo, says: []string{"no-such-repo"}},
		{name: "a dirty base", req: herdrbridge.SpawnRequest{Role: "w-wt", Name: "w-1"},
			before: func(f *wtFleet) { f.write(f.repo, "shared.txt", "not committed\n") }, want: worktree.ErrDirtyBase, says: []string{"shared.txt", "commit them first"}},
		{name: "a working directory for a worktree role", req: herdrbridge.SpawnRequest{Role: "w-wt", Name: "w-1", Cwd: "/elsewhere"},
			says: []string{"takes no working directory"}},
		{name: "a sandbox that exits at once", req: herdrbridge.SpawnRequest{Role: "w-broken", Name: "w-1"},
			want: herdrbridge.ErrSandboxExited, says: []string{"status 3", "the sandbox says no"}, exitLog: true},
		{name: "a sandbox needing a value this spawn lacks", req: herdrbridge.SpawnRequest{Role: "w-nospool", Name: "w-1"},
			launch: func(l *herdrbridge.Launch) { l.SpoolDir = "" }, want: roles.ErrSandbox, says: []string{"{spool}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWTFleet(t)
			b := f.newBridge(func(c *herdrbridge.BridgeConfig) {
				f.config(c)
				if tt.launch != nil {
					tt.launch(&c.Launch)
				}
			})
			if tt.before != nil {
				tt.before(f)
			}
			_, err := b.Spawn(context.Background(), tt.req)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Spawn: %v, want %v", err, tt.want)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error does not say %q: %v", s, err)
				}
			}
			f.nothingLeft(tt.req.Name)
			var kinds []events.Type
			for _, ev := range f.history(tt.req.Name) {
				kinds = append(kinds, ev.Type())
				if x, ok := ev.Data.(events.AgentExited); ok && tt.exitLog && (!x.Worktree.Removed || x.Worktree.Path != f.worktreePath(tt.req.Name)) {
					t.Errorf("the exit does not say the worktree was removed: %+v", x.Worktree)
				}
			}
			want := []events.Type(nil)
			if tt.exitLog {
				want = []events.Type{events.TypeAgentRegistered, events.TypeAgentExited}
			}
			if fmt.Sprint(kinds) != fmt.Sprint(want) {
				t.Errorf("%s's events %v, want %v", tt.req.Name, kinds, want)
			}
		})
	}
	t.Run("the bwrap profile in a home Claude Code never ran in", func(t *testing.T) {
		fleettest.RequireBwrap(t)
		f := newWTFleet(t)
		home := t.TempDir() // no ~/.claude.json: bubblewrap cannot bind it (the ~/.claude directory fleetd makes)
		b := f.newBridge(func(c *herdrbridge.BridgeConfig) {
			f.config(c)
			r, _ := c.Roles.Get("w-wt")
			r.Sandbox, r.Env = "bwrap", map[string]string{"HOME": home}
			c.Roles.Roles["w-bwrap"] = r
		})
		_, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-bwrap", Name: "w-1"})
		if !errors.Is(err, herdrbridge.ErrSandboxExited) || !strings.Contains(err.Error(), "Can't find source path "+home+"/.claude.json:") {
			t.Fatalf("Spawn: %v, want ErrSandboxExited with bubblewrap's word on %s/.claude.json", err, home)
		}
		if strings.Contains(err.Error(), "--unsetenv") {
			t.Errorf("the error quotes the typed command, not just what the sandbox said: %v", err)
		}
		f.nothingLeft("w-1")
	})
	t.Run("a template without {command}, built in code", func(t *testing.T) {
		f := newWTFleet(t)
		b := f.newBridge(func(c *herdrbridge.BridgeConfig) {
			f.config(c)
			c.Roles = roles.Config{Roles: map[string]roles.Role{"r": {Sandbox: "bad"}},
				Sandboxes: map[string]roles.Sandbox{"bad": {Launch: []string{"bwrap", "--ro-bind", "/", "/"}}}}
		})
		if _, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "r", Name: "w-1"}); !errors.Is(err, roles.ErrSandbox) || !strings.Contains(err.Error(), "{command}") {
			t.Errorf("Spawn: %v, want ErrSandbox about {command}", err)
		}
		f.nothingLeft("w-1")
	})
}

// A sandboxed spawn types the sandbox around the agent's command and
// returns once the agent's hooks report its session started — or, when
// they stay silent, once the start wait has passed with the sandbox
// still running.
func TestASandboxedSpawnWaitsForItsAgentsHooks(t *testing.T) {
	f := newWTFleet(t)
	b := f.newBridge(f.config)
	ctx := context.Background()
	type result struct {
		reg events.AgentRegistered
		err error
	}
	done := make(chan result, 1)
	go func() {
		reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-box", Name: "w-1"})
		done <- result{reg, err}
	}()
	reg := f.waitEvent("fleet.agent.w-1.registered", func(events.Event) bool { return true }).Data.(events.AgentRegistered)
	f.waitOutput(reg.Pane, "LAUNCHED w-1 in "+f.worktreePath("w-1"))
	select {
	case r := <-done:
		t.Fatalf("Spawn returned before the agent's hooks reported in: %+v %v", r.reg, r.err)
	default:
	}
	f.add("w-1", events.AgentSession{SessionID: "s1", State: "started"}, "") // as its SessionStart hook does
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Spawn did not return once the agent's session started")
	}
	if r.err != nil || r.reg.Sandbox != "sh-box" {
		t.Fatalf("Spawn: %+v %v", r.reg, r.err)
	}
	// Only the launcher is typed; the wrapper it runs says it started.
	if !bytes.Contains(f.herdr.Output(reg.Pane), []byte("[fleetd] the sandbox starts")) {
		t.Errorf("the launch did not run through the sandbox wrapper: %q", f.herdr.Output(reg.Pane))
	}

	slow := f.newBridge(func(c *herdrbridge.BridgeConfig) {
		f.config(c)
		c.SandboxStartWait = 300 * time.Millisecond
	})
	if reg, err := slow.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-box", Name: "w-2"}); err != nil || reg.Worktree.Path != f.worktreePath("w-2") {
		t.Errorf("a sandbox whose agent stays silent: %+v %v, want the spawn to stand", reg, err)
	}
}

// When an agent's pane goes, its worktree goes with it only if that
// loses nothing; otherwise the exit says it was kept, and why.
func TestAnExitedAgentsWorktreeIsRemovedOnlyWhenNothingIsLost(t *testing.T) {
	f := newWTFleet(t)
	r := f.start(f.config)
	ctx := context.Background()
	panes := map[string]string{}
	for _, sp := range []herdrbridge.SpawnRequest{{Name: "w-clean"}, {Name: "w-dirty"}, {Name: "w-ahead"}, {Name: "w-merged"},
		{Name: "s-1", Session: "sess"}, {Name: "s-2", Session: "sess"}} {
		sp.Role = "w-wt"
		reg, err := r.Spawn(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		panes[sp.Name] = reg.Pane
	}
	f.write(f.worktreePath("w-dirty"), "shared.txt", "unsaved work\n")
	for _, name := range []string{"w-ahead", "w-merged"} {
		f.write(f.worktreePath(name), name+".txt", "done\n")
		f.git(f.worktreePath(name), "add", "-A")
		f.git(f.worktreePath(name), "commit", "-q", "-m", name)
	}
	f.git(f.repo, "merge", "-q", "--ff-only", "fleet/w-merged")

	want := map[string]string{ // agent → why its worktree is kept ("" removed)
		"w-clean": "", "w-merged": "", "w-dirty": "1 uncommitted file",
		"w-ahead": "1 commit neither merged into main nor pushed", "s-1": "in use by s-2",
	}
	for name := range want {
		if err := f.client.ClosePane(ctx, panes[name]); err != nil {
			t.Fatal(err)
		}
	}
	for name, kept := range want {
		ev := f.waitEvent("fleet.agent."+name+".exited", func(events.Event) bool { return true })
		w := ev.Data.(events.AgentExited).Worktree
		path := f.worktreePath(name)
		if strings.HasPrefix(name, "s-") {
			path = f.worktreePath("sess")
		}
		if w.Path != path || w.Kept != kept || w.Removed != (kept == "") {
			t.Errorf("%s's exit: worktree %+v, want kept %q", name, w, kept)
		}
		_, err := os.Stat(path)
		if gone := errors.Is(err, os.ErrNotExist); gone != (kept == "") {
			t.Errorf("%s's worktree gone=%t, want %t", name, gone, kept == "")
		}
	}
	if got, _ := os.ReadFile(filepath.Join(f.worktreePath("w-dirty"), "shared.txt")); string(got) != "unsaved work\n" {
		t.Errorf("the kept worktree lost its work: %q", got)
	}
	branches := f.git(f.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/fleet/")
	if want := "fleet/sess\nfleet/w-ahead\nfleet/w-dirty"; branches != want {
		t.Errorf("branches %q, want %q (merged and untouched ones deleted)", branches, want)
	}
}
