// Package claudehook is the Claude Code side of fleetd: the hooks a
// fleetd-spawned pane runs (`fleetd hook <event>`), the settings file that
// installs them, and the spool that keeps their events when the gateway is
// unreachable.
//
// A hook reads Claude Code's JSON payload on stdin and the pane's FLEET_*
// environment, turns the payload into events (DESIGN.md's Hooks convention)
// with their ids fixed up front, and appends them straight to the FLEET
// stream. It must never block or fail the agent: the whole run is bounded
// (Options.Timeout), every problem ends in a message and a nil-or-error the
// caller prints, and when NATS cannot be reached the events are spooled to
// disk, one JSON file per event, to be replayed later — by the next hook
// run, by `fleetd hook replay`, and by the gateway's Replayer, which
// watches the spool and replays what lands in it at once. Because ids
// are fixed before the first attempt, a replay of an event that did land
// is a dedupe no-op, and lifecycle folds treat repeats idempotently.
//
// A Stop hook's reply carries token usage and cost read from the end of the
// session transcript (ReadUsage) and, for an agent in its own worktree
// (FLEET_WORKTREE), where its branch stands after the turn (package
// worktree, read-only git); every hook may tell herdr the pane's state
// with one raw pane.report_agent request.
//
// The hook connects to FLEET_NATS_URL as the pane's identity: the agent's
// own key from 'fleetd auth' (FLEET_NATS_CREDS, which also sets its inbox
// prefix, _INBOX_agent-<id>, the only one its key may subscribe to), else
// the NATS token (FLEET_NATS_TOKEN), else what the URL carries. Its key
// lets it append only the kinds a hook writes and read only its own
// roster row (CurrentTurn), which it reads by
// projections.RosterGetSubject's name and projections.Agent's
// current_turn field, pinned to projections' by a test rather than
// imported.
//
// The settings run UserPromptSubmit async, so the agent does not wait for
// it; the hooks after it in a turn (Stop, StopFailure, Notification, run
// with --after-prompt) append and report only once it has left its
// prompt's mark beside the agent's spool, with ids and times after its
// events and a herdr seq above its report (order.go), so the log, the
// spool, the views and herdr see a turn's events in order as when Claude
// Code waited for each hook. A Stop that gave up waiting marks the turn
// ended, and a prompt hook that comes after that says nothing of working.
//
// Every agent execs a hook twice a turn, and Claude Code waits for one of
// them, so what this package links is what each exec pays to start: it runs as
// its own small binary, cmd/fleetd-hook (and as `fleetd hook`, for agents
// whose settings an older fleetd wrote). So the hook speaks to NATS with
// internal/natslite, not nats.go (whose package initialisation — gob,
// net/http, crypto/tls, x509 — was most of an exec), and appends as
// events.Log does: the same checks and envelope (events/eventcore), the
// id as Nats-Msg-Id, the stream as the expected one, the acknowledgement
// awaited (a test compares what both store). natslite speaks no TLS: a
// server that wants it is out of reach, and the hook spools. ReplaySpool
// and the Replayer take any events.Log (Log, Appender).
//
// claudehook imports events/eventcore (not events: nats.go),
// internal/natslite, internal/sockdial, natsauth/natscreds and worktree
// among fleetd packages, plus nkeys and fsnotify, and not package net: it
// reports to herdr over internal/sockdial (herdr.go says why). It
// must not import events, projections, natsauth, inbox, herdrbridge,
// leadshim, router, orchestrator, herdrbridge/herdrapi or cmd: each would be linked into, and
// initialised by, every hook exec (imports_test.go checks it, and that
// the hook binary links no nats.go, net/http, crypto/tls or net).
package claudehook
