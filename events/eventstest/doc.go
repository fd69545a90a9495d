// Package eventstest holds the contract every events.Log implementation
// must pass (TestLog), and sample events of every type. Run the suite
// against each way fleetd runs the log (standalone, clustered R3) so the
// implementations cannot drift from the contract.
package eventstest
