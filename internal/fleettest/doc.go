// Package fleettest is the router and lead shim tests' harness: real
// embedded NATS with the FLEET stream, an event log, views over it (the
// in-memory fold orchestrator.LogViews, or the materialized projection),
// and fake agents that play the gateway's and the hooks' part (type a
// queued turn when the agent is free, confirm submission, reply). Only
// tests import it.
//
// fleettest imports embeddednats/natstest, events, lifecycle, projections
// and orchestrator.
package fleettest
