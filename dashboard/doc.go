// Package dashboard is fleetd's web dashboard: the page a person running a
// fleet looks at instead of reading logs, served by the lead shim at / and
// under /ui/ (leadshim.Config.Dashboard), behind the shim's auth.
//
// It owns the views — Fleet (agents by host and role), Turns, one Turn's
// timeline, Agent (its conversation), Jobs (orchestrator plans), Log (the
// event stream) and Cost (tokens and USD by agent, role, session, job or kind
// over a window) — rendered on the server as HTML fragments with
// html/template, and kept live over server-sent events: each stream
// re-renders its view when the projection changes (Fleet.Subscribe) or
// the log moves, at most once per Config.Batch, and sends it only when it
// changed; the log view sends new rows only, and the page keeps at most
// Config.LogRows of them. Live Jobs streams share one job board (jobHub):
// one fold and one follower of fleet.job.> for all of them, each change
// rendered once per distinct view and handed only to the streams whose
// fragment it changed, nothing woken while nothing changes; the last
// stream to leave stops it. The page's assets (static/) and templates are
// embedded; its script is plain JavaScript with no build step.
//
// Time travel: every view takes a point (?at=14:02:10, a duration ago, an
// RFC 3339 time or #<sequence>, see ParseAt) and shows the fleet as of
// then: the log up to that point folded by the projections' own fold in
// memory (projections.Options.Memory with UpTo) — never a second fold —
// and the log, jobs (jobs.LoadJob's fold) and costs read up to it. A fold
// replays the log from its start, so it is bounded: the folds of the most
// recent points are cached (Config.Snapshots; times that fold alike, past
// the last event by more than a host's silence, share one), at most
// Config.MaxFolds run at once (a view of another point waits
// Config.FoldWait, then is refused with 429 and ErrBusy), each within
// Config.FoldTimeout. A point no log holds — before 1970, more than a day
// ahead, a duration ago over 100 years, before what is left of a trimmed
// log — is a 400 (ErrBadPoint) saying what is accepted.
//
// It also serves the JSON the CLI reads: the roster as of a point
// (/ui/api/roster, `fleetd roster --at`), a turn's timeline
// (/ui/api/turns/{id}, `fleetd turn`) and costs (/ui/api/cost, `fleetd
// cost`), and API reads it back for them, so the routes live only here.
//
// Actions: a live page served with a CSRF token (CSRFHeader, which the
// shim in front hands it for the signed-in browser) offers the fleet's
// actions — send a text or a command to an agent, a role or a session's
// agent, spawn an agent of a role, stop or restart an agent, cancel a
// queued turn, re-send a failed one, answer a blocked agent's dialog —
// as forms and buttons whose script calls the shim's own API (POST
// /message, /agents, /agents/{id}/stop|restart|answer,
// /message/{id}/cancel) with that token and "from" Config.Identity, so
// the page and scripts share one path and the log names who acted. A
// send shows its turn in place, live, without a reload. The agent view of
// a live agent of this host shows its screen, which the script reads
// from the shim (GET /agents/{id}/screen, a read that types nothing)
// while the view is open. The dashboard itself holds no credentials and
// checks none.
//
// It reads through projections.Views and events.Log, and jobs' fold; it
// writes nothing. dashboard imports events, lifecycle, projections and
// jobs; it must not import leadshim (authentication is the shim's),
// gateway, orchestrator, herdrbridge or cmd.
package dashboard
