// Package bench holds the fixed workloads behind `fleetd bench` and the Go
// benchmarks of events and projections: appends against raw JetStream
// publishes, a projection rebuild against a raw ordered read, roster
// queries at scale, synthetic turns driven through the log, and the raw
// JetStream round trip that is the floor of every log hop. It also renders
// the one results table (text and JSON).
//
// Every number comes from a measurement in the same run; nothing is
// subtracted by guess. Workloads that do not fit testing.B (a fixed
// 1,000,000-event rebuild) are plain functions returning durations.
//
// It may import any fleetd package but cmd; cmd/fleetd wires the whole
// fabric (gateway, herdr, agents) around it.
package bench
