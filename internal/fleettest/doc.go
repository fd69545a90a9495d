// Package fleettest is the harness of fleetd's tests above the log: real
// embedded NATS with the FLEET stream, an event log, views over it — the
// projection's own fold, in memory (Memory, as `fleetd orchestrate` runs
// it) or materialized in KV (Projected, as the gateway runs it), so the
// tests test the fold production runs — and fake agents that play the
// gateway's and the hooks' part (type a queued turn when the agent is
// free, confirm submission, reply).
//
// It also holds what the tests of many packages would otherwise each
// write again: StartLog and StartAuth (a server with the stream, open or
// under `fleetd auth`'s config), Run (a component's Run for the length of
// a test), Do (one HTTP request), Clock (a settable Now) and RunWithFleetd
// (the TestMain of tests that run the fleetd binary). Only tests import
// it.
//
// fleettest imports embeddednats/natstest, events, lifecycle, projections
// and natsauth; it must not import the packages it tests (leadshim,
// router, orchestrator) or cmd.
package fleettest
