package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetd/fleetd/leadkit"
	"github.com/fleetd/fleetd/leadshim"
)

// InitCmd prepares a directory for a role in the fleet.
type InitCmd struct {
	Lead InitLeadCmd `cmd:"" help:"Give the lead's CLAUDE.md a team charter and a /delegate command."`
}

// InitLeadCmd writes the team charter (between markers, so re-running
// replaces it) into CLAUDE.md, the /delegate slash command into
// .claude/commands and the fleetd server into .mcp.json, so the lead
// delegates with one tool call.
type InitLeadCmd struct {
	Dir   string `help:"The lead's project directory." default:"." type:"path"`
	Agent string `help:"The lead's agent id in the fleet: the sender of its sends, the owner of its inbox (written to .mcp.json as FLEET_AGENT_ID)." default:"lead"`
	Role  string `help:"The lead's role in the roles file, whose may_spawn says what it may spawn (written to .mcp.json as FLEET_ROLE)." default:"lead"`

	out io.Writer
	bin string // how the lead calls fleetd; default fleetdCommand()
}

// Run writes the files and says what it wrote.
func (c *InitLeadCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	roles, source := c.roles(ctx, g)
	kit := leadkit.Kit{Exe: c.bin, Agent: c.Agent, Role: c.Role, Token: g.Token != ""}
	if kit.Exe == "" {
		kit.Exe = fleetdCommand()
	}
	if u := strings.TrimRight(g.URL, "/"); u != "" && u != "http://"+leadshim.DefaultAddr {
		kit.Flags = []string{"--url", u} // the lead's shell may not have FLEET_URL
	}
	bin := kit.Bin()
	in, err := leadkit.Install(c.Dir, kit, roles)
	if err != nil {
		return err
	}
	verb := "added the team charter to"
	if in.Replaced {
		verb = "replaced the team charter in"
	}
	fmt.Fprintf(c.out, "fleetd init lead:\n  %s %s (roles %s)\n  wrote %s: /delegate <role> \"<task>\" calls the fleetd MCP tool send\n  set the fleetd server in %s: '%s mcp' as agent %s\n",
		verb, in.ClaudeMD, source, in.Command, in.MCP, bin, kit.Agent)
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
	return leadkit.Workers(roles), "from fleetd at " + g.URL
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
