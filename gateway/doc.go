// Package gateway is one host's fleetd process, assembled: the embedded
// NATS server (or a connection to an external one), provisioning of the
// FLEET stream, the projection buckets and the router's consumers, the
// event log and its watcher, and the components wired over them — the
// projections, the router, the lead shim with the dashboard it serves,
// the hook spool replayer, the herdr bridge with its session reaper, and
// retention.
//
// Config has defaults and a Validate that reports every problem at once;
// New does no I/O; Run (or Start, Done, Err and Close) runs the whole and
// tears it down in a fixed order: components first, the log's host-down
// event, then NATS. `fleetd up`, `fleetd demo`, `fleetd bench` and the
// end-to-end tests all start a Gateway. A command that runs no gateway
// but opens panes in this machine's herdr (spawn, adopt, orchestrate
// --spawn) goes through ClientBridge, so its agents launch as the
// gateway's do and belong to the gateway that drives that herdr.
//
// gateway wires; nothing but cmd and the demo and bench packages import
// it.
package gateway
