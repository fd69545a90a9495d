package leadkit

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/leadshim"
)

// Installed says what Install wrote.
type Installed struct {
	ClaudeMD string // the CLAUDE.md holding the charter
	Command  string // the /delegate command file
	Replaced bool   // the charter was there already and is replaced
}

// Install writes the team charter into dir's CLAUDE.md, keeping
// everything outside its markers, and the /delegate command into
// dir/.claude/commands. bin is how the lead's shell calls fleetd.
func Install(dir, bin string, roles []leadshim.RoleState) (Installed, error) {
	in := Installed{
		ClaudeMD: filepath.Join(dir, "CLAUDE.md"),
		Command:  filepath.Join(dir, ".claude", "commands", "delegate.md"),
	}
	if err := os.MkdirAll(filepath.Dir(in.Command), 0o755); err != nil {
		return in, fmt.Errorf("lead directory: %w", err)
	}
	old, err := os.ReadFile(in.ClaudeMD)
	if err != nil && !os.IsNotExist(err) {
		return in, fmt.Errorf("read %s: %w", in.ClaudeMD, err)
	}
	var updated string
	updated, in.Replaced = SpliceCharter(string(old), Charter(bin, roles))
	if err := os.WriteFile(in.ClaudeMD, []byte(updated), 0o644); err != nil {
		return in, fmt.Errorf("write %s: %w", in.ClaudeMD, err)
	}
	if err := os.WriteFile(in.Command, []byte(DelegateCommand(bin)), 0o644); err != nil {
		return in, fmt.Errorf("write %s: %w", in.Command, err)
	}
	return in, nil
}

// Workers are the roles a lead delegates to: every role but the lead's own.
func Workers(roles []leadshim.RoleState) []leadshim.RoleState {
	return lo.Reject(roles, func(r leadshim.RoleState, _ int) bool { return r.Name == "lead" })
}
