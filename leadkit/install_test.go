package leadkit_test

import (
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
		in, err := leadkit.Install(dir, "fleetd", roles)
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
