// Package bench is `fleetd bench`: the fixed workloads, the stages that
// run them, and the one results table (text and JSON). The workloads are
// also the bodies of the Go benchmarks of events and projections: appends
// against raw JetStream publishes, a projection rebuild against a raw
// ordered read, roster queries and the dashboard's fleet view at scale,
// synthetic turns driven through the log, and the raw JetStream round
// trip that is the floor of every log hop.
//
// The stages (RunStage) put the workloads in a running fleetd: micro and
// rebuild on a bare embedded server, scale and turns in a gateway, fabric
// in demo's whole Fabric (herdr panes, sim agents and the real Claude
// Code, hooks exec'd as `fleetd hook`). RunAll runs a Plan's stages
// through a StageFunc and gathers the Report; cmd/fleetd's StageFunc runs
// each stage in a child `fleetd bench --stage` process, since the argv
// is its own CLI.
//
// Every number comes from a measurement in the same run; nothing is
// subtracted by guess. Workloads that do not fit testing.B (a fixed
// 1,000,000-event rebuild) are plain functions returning durations.
//
// It may import gateway and demo (the fabric it measures) but not cmd,
// and no test-only package (herdrbridge/herdrschema, internal/checkfor,
// natstest): the production binary links it and links no `testing`.
package bench
