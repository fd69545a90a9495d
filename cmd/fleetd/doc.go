// Command fleetd is the coordination fabric for fleets of AI coding agents
// in herdr panes: an event log on NATS JetStream, a gateway per host that
// types prompts into panes, Claude Code hooks that carry replies back, and a
// blocking HTTP shim for the lead. `fleetd --help` lists the commands.
//
// cmd/fleetd is the only place that wires concrete types together: the
// Gateway (gateway.go) composes the embedded server, the event log, the
// projections, the router, the lead shim, the hook spool replayer, the
// session reaper and the herdr bridge into one process. Nothing imports it.
package main
