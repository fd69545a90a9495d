package main

import (
	"context"
	"fmt"
	"github.com/fleetd/fleetd/leadkit"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetd/fleetd/leadshim"
)

// InitCmd prepares a directory for a role in the fleet.
type InitCmd struct {
	Lead InitLeadCmd `cmd:"" help:"Give the lead's CLAUDE.md a team charter and a /delegate command."`
}

// InitLeadCmd writes the team charter (between markers, so re-running
// replaces it) into CLAUDE.md and the /delegate slash command into
// .claude/commands, so the lead delegates with one tool call.
type InitLeadCmd struct {
	Dir string `help:"The lead's project directory." default:"." type:"path"`

	out io.Writer
	bin string // how the lead calls fleetd; default fleetdCommand()
}

// Run writes the files and says what it wrote.
func (c *InitLeadCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	roles, source := c.roles(ctx, g)
	bin := c.bin
	if bin == "" {
		bin = fleetdCommand()
	}
	if u := strings.TrimRight(g.URL, "/"); u != "" && u != "http://"+leadshim.DefaultAddr {
		bin += " --url " + u // the lead's shell may not have FLEET_URL
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("lead directory: %w", err)
	}
	claudeMD := filepath.Join(c.Dir, "CLAUDE.md")
	old, err := os.ReadFile(claudeMD)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read %s: %w", claudeMD, err)
	}
	updated, replaced := leadkit.SpliceCharter(string(old), leadkit.Charter(bin, roles))
	if err := os.WriteFile(claudeMD, []byte(updated), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", claudeMD, err)
	}
	cmdPath := filepath.Join(c.Dir, ".claude", "commands", "delegate.md")
	if err := os.MkdirAll(filepath.Dir(cmdPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(cmdPath, []byte(leadkit.DelegateCommand(bin)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", cmdPath, err)
	}
	verb := "added the team charter to"
	if replaced {
		verb = "replaced the team charter in"
	}
	fmt.Fprintf(c.out, "fleetd init lead:\n  %s %s (roles %s)\n  wrote %s: /delegate <role> \"<task>\" runs '%s send --to role:<role> …'\n",
		verb, claudeMD, source, cmdPath, bin)
	fmt.Fprintf(c.out, "Start the lead's Claude Code in %s; it learns the live roster with '%s roster'.\n", c.Dir, bin)
	if g.Token != "" {
		fmt.Fprintln(c.out, "The shim needs a token: export FLEET_TOKEN in the lead's environment (it is not written to any file).")
	}
	return nil
}

// roles asks the running fleetd for its roles; without one, the defaults.
func (c *InitLeadCmd) roles(ctx context.Context, g *Globals) ([]leadshim.RoleState, string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	roles, err := newShimClient(g).Roles(ctx)
	if err != nil || len(roles) == 0 {
		return leadkit.DefaultRoles, "from the Team design's defaults; fleetd at " + g.URL + " did not answer"
	}
	var workers []leadshim.RoleState
	for _, r := range roles {
		if r.Name != "lead" {
			workers = append(workers, r)
		}
	}
	return workers, "from fleetd at " + g.URL
}

// fleetdCommand is how the lead's shell should call this fleetd: by name
// when it is on PATH, else by absolute path.
func fleetdCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "fleetd"
	}
	if onPath, err := exec.LookPath("fleetd"); err == nil {
		a, _ := filepath.EvalSymlinks(onPath)
		b, _ := filepath.EvalSymlinks(self)
		if a == b {
			return "fleetd"
		}
	}
	return self
}
