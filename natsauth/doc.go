// Package natsauth generates NATS credentials and server permissions for a
// fleet: one nkey user per gateway (host) and per agent, each allowed to
// publish only the subjects its role in the fabric writes. An agent's hooks
// may append only fleet.agent.<its id>.> events; a gateway only its own
// host's agents' events (plus queued and failed for any agent, which its
// lead shim and router write); an admin user may do anything.
//
// The permissions are static: adding an agent means regenerating the
// config and reloading the servers. A fleet that adds agents all day
// should move to NATS decentralized (JWT) auth, where users are minted
// without a reload; the subject rules stay the same.
//
// natsauth imports events (for subject names) only.
package natsauth
