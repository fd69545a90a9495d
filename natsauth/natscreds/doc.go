// Package natscreds is how a fleetd process authenticates to NATS with a
// key file from `fleetd auth`: the identity names read off the file's
// name, the inbox prefix each identity must use, and the key itself
// (Load: the public key, a signer of the server's nonce, a .creds file's
// JWT).
//
// It is natsauth's client half, split out so the hook binary
// (cmd/fleetd-hook), which every agent execs twice a turn, links only
// this and not natsauth's permissions, which import projections and
// inbox — nor nats.go: natsauth.ConnectOption makes the nats.Option of a
// file for nats.go's clients, the hook's own client (internal/natslite)
// takes a Key. natsauth re-exports every name here; code that generates
// keys or permissions uses natsauth. It imports events/eventcore (for the
// name rules) and nkeys, nothing else of fleetd's.
package natscreds
