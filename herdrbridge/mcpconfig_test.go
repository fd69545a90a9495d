package herdrbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/roles"
)

// A spawned agent of an inbox role (a main) gets `fleetd mcp` for itself:
// its claude is started with --mcp-config naming a file that runs fleetd
// mcp as that agent against this host's shim; an agent of another role
// gets none.
func TestAMainsClaudeGetsTheFleetdMCPServer(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	// A stand-in claude that prints its arguments.
	claude := filepath.Join(dir, "bin", "claude")
	if err := os.MkdirAll(filepath.Dir(claude), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(claude, []byte("#!/bin/sh\necho ARGS \"$*\" END; exec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rc, err := roles.Parse(fmt.Appendf(nil, `{"roles":{
		"main":{"inbox":true,"command":[%q,"--settings","{settings}"]},
		"w":{"command":[%q,"--settings","{settings}"]}}}`, claude, claude))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	b := f.newBridge(func(c *herdrbridge.BridgeConfig) {
		c.Roles = rc
		c.Launch = herdrbridge.Launch{StateDir: state, Settings: "/s.json", Fleetd: "/opt/fleetd", FleetURL: "http://127.0.0.1:8765"}
	})
	ctx := context.Background()
	args := func(agent, role string) string {
		t.Helper()
		reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: role, Name: agent})
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`ARGS (.*) END`)
		var got string
		checkfor.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
			m := re.FindSubmatch(f.herdr.Output(reg.Pane))
			if m == nil {
				return fmt.Errorf("%s has not printed its arguments", agent)
			}
			got = string(m[1])
			return nil
		})
		return got
	}

	path := filepath.Join(state, herdrbridge.MCPDir, "main-1.json")
	if got, want := args("main-1", "main"), "--settings /s.json --mcp-config "+path; got != want {
		t.Errorf("main-1's claude got %q, want %q", got, want)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type, Command string
			Args          []string
			Env           map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, raw)
	}
	s := cfg.MCPServers["fleetd"]
	if s.Type != "stdio" || s.Command != "/opt/fleetd" || !slices.Equal(s.Args, []string{"mcp", "--agent", "main-1", "--url", "http://127.0.0.1:8765"}) ||
		s.Env["FLEET_TOKEN"] != "${FLEET_TOKEN:-}" {
		t.Errorf("the fleetd server of main-1's config = %+v", s)
	}
	if got, want := args("w-1", "w"), "--settings /s.json"; got != want {
		t.Errorf("w-1's claude got %q, want %q (no MCP config for a role that is not an inbox role)", got, want)
	}
}
