// Package natstest starts real embedded NATS servers for tests: JetStream on,
// a t.TempDir store, no TCP unless asked, and cleanup registered. Every
// fleetd package tests against the real server through this one helper
// instead of mocking the bus.
//
// A cluster can have members in child processes of the test binary
// (StartClusterWithProcesses), for tests that kill one as a crash does;
// such a test binary's TestMain calls ServeMember first.
package natstest
