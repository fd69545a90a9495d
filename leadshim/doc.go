// Package leadshim is the lead's door into the fabric: the HTTP shim of
// DESIGN.md (POST /message blocking until the turn is replied, GET
// /message/{id} to re-attach, /roster, /sessions, /roles, /events as
// server-sent events, /healthz, /metrics) and the same operations as the
// NATS micro service "fleet" (endpoints fleetd.send, fleetd.turn,
// fleetd.roster, fleetd.sessions; the subjects stay outside fleet.> so the
// FLEET stream never captures a request).
//
// POST /message/{id}/cancel fails a turn still queued for an agent,
// reason cancelled, naming who: appended guarded by the agent's last
// sequence as the gateway's typed is, so a turn is never both typed and
// cancelled.
//
// A send is queued through turns.Queuer, the one way into the log it
// shares with the orchestrator — AgentQueued on the agent (direct) or
// RoleQueued on the role, with event id = correlation id = a new ULID =
// the turn id — and then waits on the projection (projections.Views)
// until the turn is final or its timeout passes. The shim never talks to
// herdr: the gateway types the turn, the hooks reply, the router assigns
// role turns.
//
// Status codes: 400 bad request, 401 missing or wrong bearer token, 404
// unknown agent, role, turn or path, 405 wrong method, 408 the request
// body did not arrive within BodyTimeout, 409 the agent is blocked (or
// exited; or busy with "queue": false), 413 body too large, 429 the role
// is at its cap or has no ready agent and the caller asked "queue": false,
// or MaxEventReaders event streams are open, 431 headers over
// MaxHeaderBytes, 503 NATS unavailable, shutting down, too many
// connections (MaxConns, MaxPendingConns: answered as the connection is
// accepted, then closed), or the log cannot take new work (code
// stream_lost, store_full, store_low or unavailable, from Config.Health:
// refused before anything is queued; a turn whose deadline passes while
// the log takes no writes answers 503 with that code and its id), 504 the
// turn did not finish within its timeout (the error carries the id to
// re-attach). GET /message/{id} of a turn that cannot progress says why in
// "stalled".
//
// The doors are bounded for clients that are slow, stuck or hostile:
// headers within ReadHeaderTimeout, a body within BodyTimeout (reading the
// request only; a blocking send answers when its turn is final and an
// event stream lasts), idle keep-alive connections closed after
// IdleTimeout, authentication decided from the headers before any body
// is read, and event streams capped in number, in what each holds, and in
// how long one write to a reader may take (Stats, and /metrics, count
// what they hold and refuse).
//
// A dashboard (Config.Dashboard: any http.Handler; the gateway mounts
// package dashboard) is served at GET / and under /ui/ behind the same
// auth. With a token, a browser signs in at /login: the token is checked
// in constant time and a cookie (SessionCookie: HttpOnly, SameSite=Strict,
// an HMAC of its expiry keyed by the token, LoginTTL) stands for it on
// GET and HEAD requests, and on the dashboard's actions (send, spawn,
// stop, restart, cancel a turn, answer a dialog) only with the page's
// CSRF token (CSRFHeader: an HMAC of the sign-in keyed by the token, which
// the shim hands the dashboard as it serves the page): a page of another
// site can make a browser send the cookie, never read the token. Without
// a token (loopback) a write a browser says another site's page made is
// refused the same way; scripts send neither and pass.
//
// Inboxes (Config.Inbox) are durable consumers on FLEET, so a read
// never makes one for a name: GET /inbox/{agent} opens an inbox only for
// an agent of the roster or a caller presenting the bearer token (a lead
// outside the fleet; without a token, POST /inbox/{agent}/open, which the
// Client sends for its own inbox); any other read of an inbox not open —
// the sign-in cookie's, a page's — is 404 no_inbox and makes nothing.
//
// Budgets (Config.Budgets) are asked through the queue's own gate
// (turns.Queuer's Budget): at the door, so a refused send records no
// slice, and again as the turn is queued — the gate every other path
// that types a turn (a job's tasks, the nudges) goes through too.
//
// A send may name a job ("job" in POST /message, beside DESIGN.md's
// "context" selectors): the selectors are then resolved against that
// job's context store, the slice is recorded as a JobSliced event and
// appended to the text as <context> blocks, and the turn carries the job
// and the slice reference (jobs.SliceFor, RecordSlice, Prompt).
//
// Doors act on the host the shim runs on, through ports its gateway
// fills in: POST /agents spawns an agent in this host's herdr (Spawner),
// POST /agents/{id}/stop and /restart stop one for good or start it afresh
// and GET /agents/{id}/screen reads what it shows, typing nothing
// (Agents; an agent of another host is 409 other_host: only its own
// gateway touches its pane),
// when the caller's role may (roles.Role.MaySpawn; the caller's role is
// its roster row's, or the from_role of a caller outside fleetd), and
// POST /jobs runs a plan as a job in the background (Jobs), whose
// progress GET /jobs/{job} reads from the log. The shim checks what it
// can decide alone — role, name, permission — before a spawn reaches the
// Spawner, so a refusal never touches herdr.
//
// leadshim imports events, lifecycle, projections, roles, jobs and turns
// (and internal/restart to follow turn outcomes again after a failure);
// never orchestrator, router, herdrbridge or cmd.
package leadshim
