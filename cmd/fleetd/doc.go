// Command fleetd is the coordination fabric for fleets of AI coding agents
// in herdr panes: an event log on NATS JetStream, a gateway per host that
// types prompts into panes, Claude Code hooks that carry replies back, and a
// blocking HTTP shim for the lead. `fleetd --help` lists the commands.
//
// cmd/fleetd is the CLI, not the application: each command is a kong struct
// whose Run maps its flags and the Globals onto a package — gateway for
// `fleetd up`, demo for `fleetd demo`, bench for `fleetd bench` (which
// re-executes this binary for each stage: the child's argv is this CLI's
// own), simagent and herdrtest for the hidden helpers. Nothing imports it,
// and no test-only package may reach it: the binary links no `testing`.
package main
