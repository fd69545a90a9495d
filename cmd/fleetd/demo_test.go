package main

import (
	"os/exec"
	"strings"
	"testing"

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

// fleetd demo --kind mixed: real Claude Code beside real Codex, every turn
// replied (w-claude's by Claude Code, w-local's by Codex).
func TestDemoMixedRepliesEveryTurn(t *testing.T) {
	fakeapi.RequireClaude(t)
	fakeapi.RequireCodex(t)
	cmd := exec.Command(fleetdBin, "demo", "--agents", "4", "--tasks", "8", "--kind", "mixed", "--plain", "--timeout", "3m")
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"real Claude Code (w-claude) and real Codex (w-local)", "all 4 agents ready", "turns:    8 sent, 8 replied, 0 failed"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
}
