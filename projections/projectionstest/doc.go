// Package projectionstest generates seeded, realistic event workloads —
// agents registering, turns queued, typed, submitted, replied and failed,
// status flapping, sessions, hosts beating and going down — sprinkled
// with the faults a fold must survive: events re-appended under a fresh
// id, exact envelopes re-published past the dedupe window, out-of-order
// and orphan events, and junk. The projections tests and `fleetd bench`
// play them into a real stream.
//
// projectionstest imports events only (and nats.go for raw publishes).
package projectionstest
