// Package projections folds the event log into fleetd's read models — the
// roster, sessions and turns — and keeps them materialized in KV buckets
// (fleet_roster, fleet_sessions, fleet_turns) with a checkpoint, so a
// restart resumes where it stopped and `nats kv watch fleet_roster` is a
// live roster. A rebuild from an empty store by replay yields exactly the
// live state; malformed, duplicate or out-of-order events never corrupt a
// view.
//
// It owns the one fold of the read models (fold.go: events in, state out),
// the Views over it, and the KV materializer; and it names the buckets and
// their rows once (BucketRoster and the rest, Buckets, Agent, Session,
// RosterGetSubject) for everyone who reads them: the shim, router and
// orchestrator through Views, the Claude Code hook and natsauth's
// permissions through the names. Nobody else folds the roster or sessions
// or declares a row type of their own.
//
// New returns a Projector; its Run is the one fold loop. With
// Options.Memory the same fold runs in memory only — no bucket created or
// written, starting from the gateway's checkpoint when it can read it —
// for clients such as `fleetd orchestrate` and for tests. Turns are folded
// through lifecycle.Book, like everywhere else. How the fold stays correct:
//
//   - The checkpoint (bucket fleet_checkpoints, key "projections", chunked)
//     is a snapshot of the whole fold state as of a stream sequence: rows,
//     hosts, the open turns. It is written only after every view entry it
//     covers, so a restart loads it, re-applies the events after it and
//     rewrites what they touch — nothing is applied twice.
//   - An event re-appended with its old id at a new position (a replayed
//     hook spool) is dropped by a per-agent memory of recent event ids, so
//     replies are not counted twice and a stale submitted or failure never
//     joins a later turn. Status events are ordered by event time; host
//     liveness likewise.
//   - Ended turns leave the Book (lifecycle.Book.Forget) for an LRU of
//     Options.TurnCacheSize, then KV. A queued event naming a turn that
//     ended earlier in the log does not open it again — also while the
//     write that takes it to KV is still in flight (the fold goes on
//     meanwhile, and looks at that write's turns too).
//   - A catch-up (a rebuild, a start behind the log) writes on its own
//     goroutine while it folds on; roster and session rows go with the
//     checkpoints and at the end. With Options.BatchWrites (a server that
//     syncs every write) each bucket's writes of a flush, and each
//     checkpoint with its head, go as atomic batches: one sync each.
//   - A host is stale when down, silent for HostTTL by the clock and in
//     the log, or judged silent by a router's release of a turn from one
//     of its agents (ReasonHostStale) with no newer heartbeat after it:
//     the log's judgement, so every fold agrees on it.
//   - Events about an agent that has not registered are folded into a
//     hidden row that shows once it registers.
//   - The log may be trimmed (package retention): a restart resumes after
//     the checkpoint, and Rebuild of a log whose first sequence passed 1
//     starts from the latest checkpoint, not from what is left of the log
//     (ErrTrimmed when no checkpoint covers it). Horizon tells retention
//     what must stay: everything after the checkpoint and every open
//     turn's events.
//   - A stream created again (a new incarnation, its sequences restarted)
//     is folded from its first event; the views keep what they held. The
//     checkpoint records which incarnation its position belongs to.
//   - Usage for budgets (Views.Usage) is folded from replied events into
//     time buckets per agent and per role (5-minute steps for the last
//     hour, hourly for the last day), pruned by the log's own times, so
//     an agent costs at most 38 buckets and every host folds the same
//     numbers. Roles' usage rides in the checkpoint beside the rows;
//     a checkpoint from before budgets starts it empty.
//   - Final turns expire from the turns bucket TurnTTL after their last
//     write (a per-key TTL); open turns never do.
//
// projections imports events and lifecycle only; it must not import the
// packages that read it (orchestrator, leadshim, router, claudehook,
// natsauth, retention) or cmd.
package projections
