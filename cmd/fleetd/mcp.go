package main

import (
	"context"

	"github.com/fleetd/fleetd/mcpserver"
)

// McpCmd serves the fleet's tools to one MCP client (Claude Code) over
// stdio. Claude Code starts it from .mcp.json; it talks to the local
// fleetd through the lead shim (--url, --token).
type McpCmd struct {
	Agent string `help:"The agent this server serves: the sender of its sends, the owner of its inbox. A fleetd pane sets FLEET_AGENT_ID; a lead outside fleetd configures its own id (e.g. lead)." env:"FLEET_AGENT_ID" required:"" placeholder:"ID"`
	Role  string `help:"The served agent's role, for an agent that is not on the roster (a lead outside fleetd): its may_spawn says what spawn may start. A registered agent's role is the roster's." env:"FLEET_ROLE" placeholder:"ROLE"`
}

// Run serves until the client disconnects (stdin closes) or a signal.
func (c *McpCmd) Run(ctx context.Context, g *Globals) error {
	return mcpserver.ServeStdio(ctx, mcpserver.Config{Fleet: newShimClient(g), Agent: c.Agent, Role: c.Role, Version: version})
}
