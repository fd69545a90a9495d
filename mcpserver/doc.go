// Package mcpserver is `fleetd mcp`: a Model Context Protocol server, on
// the official Go SDK, that gives an agent which can only call out — a
// Claude Code main or lead, an MCP client — the fleet as tools: send a
// turn (blocking, async, or with the reply coming back to its own inbox),
// wait for a turn, read the roster, sessions and roles, pull, ack and
// answer the messages of its durable inbox, start agents (spawn, where
// its role's may_spawn allows) and run plans as jobs (orchestrate).
//
// The server knows which agent it serves (Config.Agent: FLEET_AGENT_ID in
// a fleetd pane, a configured id for a lead outside fleetd) and signs its
// sends and replies with it. It reaches the fabric only through Fleet,
// which leadshim.Client satisfies: the same HTTP shim every other client
// uses, so it holds no NATS credentials and no state of its own — a
// restart of the server (or of fleetd) loses nothing, and what the
// server acknowledges the log has.
//
// Spawns and jobs are the shim's host's: its gateway owns the herdr the
// panes open in and runs the job. What the caller may spawn is decided by
// the shim from the caller's role — the roster's for a registered agent,
// Config.Role for a lead outside fleetd — never by this server.
//
// Bad input never crashes it: unknown tools and arguments that do not fit
// a tool's input schema are refused by the SDK, and every refusal of
// fleetd (an unknown agent, a text over the limit, a timeout) comes back
// as a tool error whose text says what to change.
//
// mcpserver imports leadshim (for its wire types) and projections (the
// rows it lists); never gateway, herdrbridge or cmd.
package mcpserver
