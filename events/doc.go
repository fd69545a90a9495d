// Package events is fleetd's event log: the CloudEvents envelope, one typed
// data struct per event type, the registry that decodes them, the subject
// names of the FLEET stream, and Log, which appends to and reads from
// JetStream.
//
// The log is the source of truth. Appends are idempotent (the event id, a
// ULID, is sent as Nats-Msg-Id) and optimistic (an expected last subject
// sequence guards aggregate writes; a conflict is ErrConcurrency). A step
// that several writers may take alike (a router's assignment, a notice of
// a turn's end) gets a DerivedID, the same for all of them. Readers
// skip and count anything on fleet.> that is not a valid event, because
// anyone with a NATS client can publish there: that includes an event with
// a string field over its Limits (ids 256 bytes, paths 4 KiB, free text
// 1 MiB + 64 KiB by default), which Append refuses to write too. A skipped
// message is counted and reported once, however many readers meet it.
//
// The pure half of all this — the types, the envelope, the registry,
// subjects and ids — lives in events/eventcore, which imports no NATS
// client (the hook binary links it alone); events re-exports every name
// of it. events imports no other fleetd package than that.
package events
