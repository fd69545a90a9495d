package leadkit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/leadkit"
	"github.com/fleetd/fleetd/leadshim"
)

func TestInstallKeepsTheLeadsOwnNotesAndReplacesOnlyItsCharter(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "CLAUDE.md")
	if err := os.WriteFile(md, []byte("# My project\n\nKeep this."), 0o644); err != nil {
		t.Fatal(err)
	}
	roles := leadkit.Workers([]leadshim.RoleState{{Name: "lead"}, {Name: "w-claude", Description: "careful edits"}})
	if len(roles) != 1 || roles[0].Name != "w-claude" {
		t.Fatalf("workers = %v, want w-claude only", roles)
	}
	for i, want := range []bool{false, true} {
		in, err := leadkit.Install(dir, leadkit.Kit{Exe: "fleetd"}, roles)
		if err != nil {
			t.Fatal(err)
		}
		if in.Replaced != want {
			t.Errorf("install %d: replaced = %v, want %v", i+1, in.Replaced, want)
		}
	}
	doc, _ := os.ReadFile(md)
	if !strings.HasPrefix(string(doc), "# My project\n\nKeep this.\n") || strings.Count(string(doc), leadkit.CharterBegin) != 1 ||
		!strings.Contains(string(doc), "w-claude") {
		t.Errorf("CLAUDE.md after two installs:\n%s", doc)
	}
	cmd, err := os.ReadFile(filepath.Join(dir, ".claude", "commands", "delegate.md"))
	if err != nil || !strings.Contains(string(cmd), "fleetd send --to role:") {
		t.Errorf("delegate.md: %v\n%s", err, cmd)
	}
}

func TestInstallSetsTheFleetdMCPServerAndKeepsTheOthers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"other": {"command": "other-mcp"}}, "keep": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	kit := leadkit.Kit{Exe: "/opt/fleetd", Flags: []string{"--url", "http://h1:8765"}, Agent: "lead-1", Token: true}
	for range 2 {
		if _, err := leadkit.Install(dir, kit, nil); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := os.ReadFile(path)
	var doc struct {
		MCPServers map[string]leadkit.MCPServer `json:"mcpServers"`
		Keep       bool                         `json:"keep"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf(".mcp.json %s: %v", raw, err)
	}
	got := doc.MCPServers["fleetd"]
	if got.Command != "/opt/fleetd" || strings.Join(got.Args, " ") != "--url http://h1:8765 mcp" ||
		got.Env["FLEET_AGENT_ID"] != "lead-1" || got.Env["FLEET_ROLE"] != "lead" || got.Env["FLEET_TOKEN"] != "${FLEET_TOKEN}" {
		t.Errorf("fleetd server = %+v", got)
	}
	if doc.MCPServers["other"].Command != "other-mcp" || !doc.Keep {
		t.Errorf(".mcp.json lost what was there: %s", raw)
	}
	cmd, _ := os.ReadFile(filepath.Join(dir, ".claude", "commands", "delegate.md"))
	if !strings.Contains(string(cmd), "mcp__fleetd__send") {
		t.Errorf("/delegate does not use the MCP tool send:\n%s", cmd)
	}
}
