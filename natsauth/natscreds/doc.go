// Package natscreds is how a fleetd process authenticates to NATS with a
// key file from `fleetd auth`: the identity names read off the file's
// name, the inbox prefix each identity must use, and the nats.Option of
// the file (ConnectOption).
//
// It is natsauth's client half, split out so the hook binary
// (cmd/fleetd-hook), which every agent execs twice a turn, links only
// this and not natsauth's permissions, which import projections and
// inbox. natsauth re-exports every name here; code that generates keys
// or permissions uses natsauth. It imports events (for the name rules)
// and nats.go, nothing else of fleetd's.
package natscreds
