// Package eventcore is the half of the event log that needs no NATS
// client: the CloudEvents envelope and its encoding, one typed data struct
// per event type, the registry that decodes them, their limits, the
// subject names of the FLEET stream, event ids, and the Ack, Query and
// AppendOption values a Log speaks in.
//
// It exists so that the hook binary (cmd/fleetd-hook), which every agent
// execs twice a turn, can build, encode, spool and decode events without
// linking nats.go, whose package initialisation (gob, net/http,
// crypto/tls, x509) was most of a hook's exec. Package events names every
// exported name here again (type aliases, constants, wrappers), so the
// rest of fleetd imports events alone and does not see the split.
//
// eventcore imports no other fleetd package and no NATS package; keep it
// that way (imports_test.go checks the first, the hook's benchmark the
// second).
package eventcore
