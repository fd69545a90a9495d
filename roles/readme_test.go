package roles_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// readmeJSON returns the first ```json block of docs/worktrees.md (the
// README's sandbox reference, moved there) after the line that starts
// with heading.
func readmeJSON(t *testing.T, heading string) []byte {
	t.Helper()
	b, err := os.ReadFile("../docs/worktrees.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading)
	if !ok {
		t.Fatalf("docs/worktrees.md has no %q", heading)
	}
	_, block, ok := strings.Cut(after, "```json\n")
	if !ok {
		t.Fatalf("no json block after %q", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	return []byte(block)
}

// The README documents the shipped bubblewrap profile word for word, and
// its podman example is a roles file fleetd takes.
func TestTheREADMEsSandboxesAreTheRealOnes(t *testing.T) {
	var launch []string
	if err := json.Unmarshal(readmeJSON(t, "**The `bwrap` profile**"), &launch); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(launch, roles.Bwrap.Launch) {
		t.Errorf("the README's bwrap profile\n%q\nis not roles.Bwrap's\n%q", launch, roles.Bwrap.Launch)
	}

	c, err := roles.Parse(readmeJSON(t, "**A container**"))
	if err != nil {
		t.Fatalf("the README's podman example: %v", err)
	}
	r, err := c.Get("w-app")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Sandbox(r.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := s.Expand(roles.LaunchVars{Command: []string{"claude"}, Env: map[string]string{"FLEET_AGENT_ID": "w-app-1"},
		Values: map[string]string{"worktree": "/w", "gitdir": "/g", "home": "/h", "spool": "/sp", "settings": "/s.json", "fleetd": "/f", "creds": "/d/no-nats-key", "mcp": "/d/no-mcp-config", "agent": "w-app-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv, " "); !strings.Contains(got, "--env FLEET_AGENT_ID") || !strings.HasSuffix(got, "-w /w ghcr.io/acme/app-agent:1 claude") {
		t.Errorf("the podman example expands to %s", got)
	}
}
