// Package natslite is the smallest NATS client the hook needs: one plain
// TCP connection, the INFO/CONNECT handshake with a token, a user and
// password, or an nkey (a signed nonce, with a JWT for a .creds file),
// request and reply over one inbox subscription, JetStream's publish
// acknowledgement, and a direct get.
//
// It exists because nats.go's package initialisation (gob, net/http,
// crypto/tls, x509) costs a process more than everything a hook does, and
// the hook binary (cmd/fleetd-hook) is exec'd twice a turn by every
// agent. It is synchronous — Send writes a request, Await reads the
// connection until its reply comes, keeping other awaited replies aside —
// so it starts no goroutine; one Conn serves one caller at a time. A hook
// sends what it can before it awaits (Options.Pipelined, PublishAll): two
// round trips a hook, each one write, and — when no secret can leak — no
// wait for the server's INFO before the first. It speaks no TLS (ErrTLS): a caller whose
// server wants TLS uses nats.go or falls back.
//
// It dials with internal/sockdial, not package net: net brings the cgo
// resolver, which links the hook dynamically (ld.so and libc page in on
// every exec, ~70 page faults here), for a dial to an address.
//
// Only the hook's path uses it (package claudehook); the gateway and
// every other fleetd client keep nats.go. It imports no fleetd package
// but internal/sockdial,
// and must import neither nats.go, crypto/tls nor net.
package natslite
