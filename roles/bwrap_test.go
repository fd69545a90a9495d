package roles_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/roles"
)

// probeEnv makes the test binary, run inside a sandbox, probe what it may
// do there (runProbe) instead of running the tests.
const probeEnv = "FLEET_SANDBOX_PROBE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(probeEnv); spec != "" {
		runProbe(spec)
		return
	}
	os.Exit(m.Run())
}

// probeSpec is what the probe tries, by name.
type probeSpec struct {
	Write   map[string]string `json:"write"`   // name → file to create
	Read    map[string]string `json:"read"`    // name → file to read
	Exec    map[string]string `json:"exec"`    // name → program to run
	Connect map[string]string `json:"connect"` // name → unix socket to connect to
}

// probeResult is what the probe could do, and what it saw.
type probeResult struct {
	OK  map[string]bool   `json:"ok"`
	Env map[string]string `json:"env"`
	Cwd string            `json:"cwd"`
}

func runProbe(spec string) {
	var s probeSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	r := probeResult{OK: map[string]bool{}, Env: map[string]string{}}
	for name, path := range s.Write {
		r.OK[name] = os.WriteFile(path, []byte(name+"\n"), 0o644) == nil
	}
	for name, path := range s.Read {
		_, err := os.ReadFile(path)
		r.OK[name] = err == nil
	}
	for name, path := range s.Exec {
		r.OK[name] = exec.Command(path).Run() == nil
	}
	for name, path := range s.Connect {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
		}
		r.OK[name] = err == nil
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		r.Env[k] = v
	}
	r.Cwd, _ = os.Getwd()
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// The shipped bubblewrap profile, run for real around a probe: the agent
// writes its worktree, its repository's git dir, Claude Code's state and
// the hooks' spool, and nothing else; it cannot read fleetd's state (the
// NATS store, the gateway's key) or another agent's worktree, nor reach
// herdr's socket, but reads its own NATS key and MCP config there;
// it starts in its worktree, and a clean role's agent carries no
// subscription-boundary variable even when the pane's environment leaks
// some, while a gateway role's keeps exactly its URL.
func TestTheBwrapProfileConfinesTheAgentToItsWorktree(t *testing.T) {
	fleettest.RequireBwrap(t)
	base := fleettest.OutsideTmp(t)
	p := func(parts ...string) string { return filepath.Join(append([]string{base}, parts...)...) }
	for _, d := range []string{p("state", "worktrees", "w-1"), p("state", "worktrees", "w-2"), p("state", "spool"), p("state", "nats"), p("state", "auth", "agents"), p("state", "mcp"),
		p("repo", ".git"), p("home", ".claude"), p("bin"), p("state", "codex", "w-1"), p("state", "codex", "w-2")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{p("state", "nats", "secret"): "s", p("state", "worktrees", "w-2", "theirs.txt"): "t",
		p("state", "claude-settings.json"): "{}", p("home", ".claude.json"): "{}",
		p("state", "auth", "agents", "agent-w-1.nk"): "SU-own", p("state", "auth", "gateway-h1.nk"): "SU-gateway",
		p("state", "mcp", "w-1.json"):            `{"mcpServers":{}}`,
		p("state", "codex", "w-1", "hooks.json"): "{}", p("state", "codex", "w-2", "hooks.json"): "{}"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The probe is this test binary, copied out of /tmp (which the
	// sandbox replaces with its own) to where {fleetd} would be.
	probe := p("bin", "fleetd")
	copyFile(t, os.Args[0], probe)
	herdr := p("herdr.sock")
	ln, err := net.Listen("unix", herdr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			c.Close()
		}
	}()
	hostTmp := filepath.Join(os.TempDir(), filepath.Base(base)+"-probe")
	spec, _ := json.Marshal(probeSpec{
		Write: map[string]string{
			"worktree": p("state", "worktrees", "w-1", "mine.txt"), "gitdir": p("repo", ".git", "probe"),
			"claude state": p("home", ".claude", "probe"), "claude config": p("home", ".claude.json"), "spool": p("state", "spool", "probe"),
			"tmp": hostTmp,
			// Read-only: the home, the repository's own checkout, the
			// settings. The state directory is a tmpfs of the sandbox's.
			"home": p("home", "probe"), "repo checkout": p("repo", "probe"), "state": p("state", "probe"),
			"settings": p("state", "claude-settings.json"), "own key": p("state", "auth", "agents", "agent-w-1.nk"),
			"mcp config": p("state", "mcp", "w-1.json"),
			// Another kind's config home, in the state directory: its
			// CLI writes there, but not fleetd's hooks.
			"config home": p("state", "codex", "w-1", "rollout.jsonl"), "own hooks": p("state", "codex", "w-1", "hooks.json"),
		},
		Read: map[string]string{"settings (read)": p("state", "claude-settings.json"), "another worktree": p("state", "worktrees", "w-2", "theirs.txt"),
			"fleetd's state": p("state", "nats", "secret"), "own key (read)": p("state", "auth", "agents", "agent-w-1.nk"),
			"the gateway's key": p("state", "auth", "gateway-h1.nk"), "mcp config (read)": p("state", "mcp", "w-1.json"),
			"own hooks (read)": p("state", "codex", "w-1", "hooks.json"), "another's config home": p("state", "codex", "w-2", "hooks.json")},
		Exec:    map[string]string{"fleetd": "/bin/true"},
		Connect: map[string]string{"herdr": herdr},
	})
	values := map[string]string{"worktree": p("state", "worktrees", "w-1"), "gitdir": p("repo", ".git"), "home": p("home"), "state": p("state"),
		"spool": p("state", "spool"), "settings": p("state", "claude-settings.json"), "fleetd": probe, "creds": p("state", "auth", "agents", "agent-w-1.nk"), "mcp": p("state", "mcp", "w-1.json"), "herdr": herdr, "agent": "w-1", "role": "r"}
	run := func(t *testing.T, guarded map[string]string) probeResult {
		t.Helper()
		// Claude Code's config home and a Codex agent's, at once: what
		// {config} binds is the same for every kind.
		config := []roles.ConfigPath{{Path: p("home", ".claude"), Write: true, Dir: true}, {Path: p("home", ".claude.json"), Write: true},
			{Path: p("state", "codex", "w-1"), Write: true, Dir: true}, {Path: p("state", "codex", "w-1", "hooks.json")}}
		argv, err := roles.Bwrap.Expand(roles.LaunchVars{Command: []string{probe}, Env: guarded, Unset: roles.Unsets(guarded), Config: config, Values: values})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		// The pane's environment: the guarded one, over herdr's own,
		// which here leaks an endpoint and a key.
		cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL=http://leaked.example", "ANTHROPIC_API_KEY=leaked", probeEnv+"="+string(spec))
		for k, v := range guarded {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("bwrap: %v\n%s\n%s", err, exit.Stderr, out)
			}
			t.Fatal(err)
		}
		var r probeResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("probe said %q: %v", out, err)
		}
		return r
	}

	r := run(t, map[string]string{"FLEET_AGENT_ID": "w-1"})
	want := map[string]bool{"worktree": true, "gitdir": true, "claude state": true, "claude config": true, "spool": true,
		"home": false, "repo checkout": false, "settings": false,
		"settings (read)": true, "another worktree": false, "fleetd's state": false, "fleetd": true, "herdr": false,
		"own key": false, "own key (read)": true, "the gateway's key": false, "mcp config": false, "mcp config (read)": true,
		"config home": true, "own hooks": false, "own hooks (read)": true, "another's config home": false}
	for name, ok := range want {
		if got, tried := r.OK[name]; !tried || got != ok {
			t.Errorf("%s: could=%t (tried %t), want %t", name, got, tried, ok)
		}
	}
	if got := readFile(t, p("state", "worktrees", "w-1", "mine.txt")); got != "worktree\n" {
		t.Errorf("the worktree write did not reach the host: %q", got)
	}
	// /tmp and the state directory are the sandbox's own: what it writes
	// there never reaches the host.
	for _, path := range []string{hostTmp, p("state", "probe")} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a write in the sandbox reached the host: %s exists (%v)", path, err)
		}
	}
	if c, err := net.Dial("unix", herdr); err != nil {
		t.Errorf("herdr's socket works outside the sandbox? %v", err)
	} else {
		c.Close()
	}
	if r.Cwd != values["worktree"] {
		t.Errorf("the agent starts in %s, want its worktree", r.Cwd)
	}
	if r.Env["FLEET_AGENT_ID"] != "w-1" {
		t.Errorf("the guarded environment did not reach the agent: FLEET_AGENT_ID=%q", r.Env["FLEET_AGENT_ID"])
	}
	for _, k := range roles.BoundaryVars {
		if v, ok := r.Env[k]; ok {
			t.Errorf("a clean role's agent carries %s=%q", k, v)
		}
	}

	t.Run("a gateway role keeps exactly its URL", func(t *testing.T) {
		r := run(t, map[string]string{"FLEET_AGENT_ID": "w-1", "ANTHROPIC_BASE_URL": "http://gw.example"})
		var carried []string
		for _, k := range roles.BoundaryVars {
			if _, ok := r.Env[k]; ok {
				carried = append(carried, k)
			}
		}
		if !slices.Equal(carried, []string{"ANTHROPIC_BASE_URL"}) || r.Env["ANTHROPIC_BASE_URL"] != "http://gw.example" {
			t.Errorf("boundary variables %v, ANTHROPIC_BASE_URL=%q; want only the role's URL", carried, r.Env["ANTHROPIC_BASE_URL"])
		}
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
