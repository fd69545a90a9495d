// Package leadkit is what a Claude Code lead needs in its project to
// delegate through fleetd: the team charter section of its CLAUDE.md
// (between markers, so writing it again replaces it), the /delegate
// slash command (which calls the fleetd MCP tool send), and the fleetd
// entry of its .mcp.json, which starts `fleetd mcp` as the lead's agent
// id so Claude Code has the fleet's tools and an inbox. fleetd init lead
// writes them, with the roles a running fleetd reports (Roles), the
// fleetd command the lead's shell runs (Command), and says what it wrote
// (Installed.Summary). It imports only leadshim (for the role rows a
// running fleetd reports, and the client that asks for them).
package leadkit
