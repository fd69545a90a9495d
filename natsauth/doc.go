// Package natsauth generates NATS credentials and server permissions for a
// fleet: one nkey user per gateway (host) and per agent, and an admin, each
// allowed exactly what its part in the fabric needs.
//
//   - An agent's key publishes its own hook events (HookKinds: submitted,
//     replied, failed, session, status) and nothing else: never
//     registered, queued, typed, exited, deferred or attention, which come
//     from the gateway that owns its pane. It reads its own roster row (a
//     direct get of that one key) and replies on its own inbox prefix
//     (_INBOX_agent-<id>), never _INBOX.> or the log.
//   - A gateway's key publishes its host's events, every kind of its own
//     agents' events, queued and failed for any agent (its shim and router
//     write those), role queues and job events; it reads FLEET and the
//     projection buckets, writes the buckets, runs the router's durable
//     consumers and the micro service, and replies on _INBOX_gateway-<host>.
//     It may not create, update, purge or delete a stream.
//   - The admin may do anything: it provisions the fabric (FLEET, the
//     buckets, the router's consumers) and is the only one that may change
//     them.
//
// Write lays the keys out so a pane is never pointed at a directory of
// keys that may do more: server.conf, admin.nk and gateway-<host>.nk in
// the directory, agent keys in its agents/ subdirectory, every file 0600.
// server.conf also carries the secret cluster routes authenticate with.
//
// The permissions are static: adding an agent means regenerating the
// config and reloading the servers. A fleet that adds agents all day
// should move to NATS decentralized (JWT) auth, where users are minted
// without a reload; the subject rules stay the same.
//
// natsauth imports events (for subject names) and projections (for the
// names of its buckets and of the roster read an agent may make) only; it
// must not import claudehook, leadshim or cmd, which import it.
package natsauth
