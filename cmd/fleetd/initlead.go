package main

import (
	"context"
	"io"
	"os"

	"github.com/fleetd/fleetd/leadkit"
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
	bin string // how the lead calls fleetd; default leadkit.Command()
}

// Run writes the files and says what it wrote.
func (c *InitLeadCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	roles, source := leadkit.Roles(ctx, newShimClient(g), g.URL)
	kit := leadkit.Kit{Exe: c.bin, Flags: leadkit.URLFlags(g.URL), Agent: c.Agent, Role: c.Role, Token: g.Token != ""}
	if kit.Exe == "" {
		kit.Exe = leadkit.Command()
	}
	in, err := leadkit.Install(c.Dir, kit, roles)
	if err != nil {
		return err
	}
	in.Summary(c.out, kit, c.Dir, source)
	return nil
}
