// Package projections folds the event log into fleetd's read models — the
// roster, sessions and turns — and keeps them materialized in KV buckets
// (fleet_roster, fleet_sessions, fleet_turns) with a checkpoint, so a
// restart resumes where it stopped and `nats kv watch fleet_roster` is a
// live roster. A rebuild from an empty store by replay yields exactly the
// live state; malformed, duplicate or out-of-order events never corrupt a
// view.
//
// projections imports events and lifecycle only.
package projections
