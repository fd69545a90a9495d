// Package natstest starts real embedded NATS servers for tests: JetStream on,
// a t.TempDir store, no TCP unless asked, and cleanup registered. Every
// fleetd package tests against the real server through this one helper
// instead of mocking the bus.
package natstest
