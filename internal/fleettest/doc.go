// Package fleettest is the router and lead shim tests' harness: real
// embedded NATS with the FLEET stream, an event log, views over it — the
// projection's own fold, in memory (Memory, as `fleetd orchestrate` runs
// it) or materialized in KV (Projected, as the gateway runs it), so the
// tests test the fold production runs — and fake agents that play the
// gateway's and the hooks' part (type a queued turn when the agent is
// free, confirm submission, reply). Its Run runs any component's
// Run(ctx) for the length of a test. Only tests import it.
//
// fleettest imports embeddednats/natstest, events, lifecycle, projections
// and natsauth (StartAuth); it must not import the packages it tests (leadshim,
// router, orchestrator) or cmd.
package fleettest
