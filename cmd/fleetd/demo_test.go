package main

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/fakeapi"
)

// The README's first command: fleetd demo on a machine with no herdr and
// no API key finishes with every turn replied and tells how to tap it.
func TestDemoRepliesEveryTurn(t *testing.T) {
	cmd := exec.Command(fleetdBin, "demo", "--agents", "4", "--tasks", "8", "--think", "200ms", "--kind", "sim", "--plain", "--timeout", "2m")
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"all 4 agents ready", "turns:    8 sent, 8 replied, 0 failed", "nats --server nats://127.0.0.1:", "sub --stream FLEET --all"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "✓ "); n != 8 {
		t.Errorf("%d replies printed, want 8:\n%s", n, s)
	}
	for _, role := range []string{"w-claude-1", "w-local-1", "w-claude-2", "w-local-2"} {
		if !strings.Contains(s, role+" ") {
			t.Errorf("agent %s missing from the output", role)
		}
	}
}

// fleetd demo --kind mixed with every real CLI installed: one role of
// each, every turn replied, each role's agent answering its share.
func TestDemoMixedRepliesEveryTurn(t *testing.T) {
	fakeapi.RequireClaude(t)
	fakeapi.RequireCodex(t)
	fakeapi.RequireGemini(t)
	fakeapi.RequireOpenCode(t)
	fakeapi.RequirePi(t)
	// Five agents at once, the Node CLIs taking seconds each to start.
	cmd := exec.Command(fleetdBin, "demo", "--tasks", "10", "--kind", "mixed", "--plain", "--timeout", "4m")
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		// --agents' default of 4 is raised to one per role.
		"5 real agents, a role for each CLI on PATH: Claude Code (w-claude), Codex (w-codex), Gemini CLI (w-gemini), OpenCode (w-opencode), Pi (w-pi),",
		"all 5 agents ready", "turns:    10 sent, 10 replied, 0 failed",
		"per agent: w-claude-1 2, w-codex-1 2, w-gemini-1 2, w-opencode-1 2, w-pi-1 2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
}

// --kind takes the demo's kinds, no other, and says how to install a
// real CLI that is not on PATH.
func TestDemoKindsAndAMissingCLI(t *testing.T) {
	f, _ := reflect.TypeFor[DemoCmd]().FieldByName("Kind")
	if got, want := f.Tag.Get("enum"), strings.Join(demo.Kinds, ","); got != want {
		t.Errorf("--kind's enum %q, want demo's kinds %q", got, want)
	}
	for _, k := range demo.Kinds {
		if !strings.Contains(f.Tag.Get("help"), k) {
			t.Errorf("--kind's help does not name %s", k)
		}
	}
	for _, tt := range []struct {
		kind string
		want []string
	}{
		{"gpt", []string{`--kind must be one of "sim","claude","codex","gemini","opencode","pi","mixed","auto" but got "gpt"`}},
		{"opencode", []string{"--kind opencode needs the opencode CLI (OpenCode " + fakeapi.OpenCodeVersion + ") on PATH",
			"npm install -g opencode-ai@" + fakeapi.OpenCodeVersion, ".ci/install-opencode.sh"}},
		{"mixed", []string{"--kind mixed needs at least two agent CLIs on PATH, found none", ".ci/install-pi.sh"}},
	} {
		cmd := exec.Command(fleetdBin, "demo", "--kind", tt.kind, "--timeout", "10s")
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "PATH="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("--kind %s with nothing on PATH succeeded:\n%s", tt.kind, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("--kind %s: output lacks %q:\n%s", tt.kind, w, out)
			}
		}
	}
}

// fleetd demo --runtime agentapi with Claude Code on PATH: the real
// Claude Code, each agent under its own agentapi server, every turn
// replied.
func TestDemoUnderAgentapiRepliesEveryTurn(t *testing.T) {
	requireAgentapi(t)
	fakeapi.RequireClaude(t)
	cmd := exec.Command(fleetdBin, "demo", "--runtime", "agentapi", "--kind", "claude", "--tasks", "6", "--plain", "--timeout", "3m")
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	if s := string(out); !strings.Contains(s, "all 4 agents ready") || !strings.Contains(s, "turns:    6 sent, 6 replied, 0 failed") {
		t.Errorf("demo output:\n%s", s)
	}
}
