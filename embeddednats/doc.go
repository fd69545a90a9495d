// Package embeddednats runs nats-server in-process with JetStream, the way
// fleetd deploys by default: a file store under a data dir, SyncAlways on,
// no signal handlers of its own, a client listener on loopback so the stock
// nats CLI can tap it, and optionally membership in a cluster.
//
// A listener other machines can reach — clients off loopback, cluster routes
// off loopback — runs only with authentication (Config.Token, or the users
// and route authorization of a config file); Start refuses it otherwise.
//
// It owns the server's lifecycle (options, readiness, shutdown) and nothing
// else: it imports no other fleetd package, and knows nothing of subjects or
// streams. Tests start servers through the natstest subpackage.
package embeddednats
