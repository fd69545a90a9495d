// Package recording keeps real sessions of agent CLIs driven by fleetd as
// regression tests: what the bridge saw of an agent (every screen it read,
// herdr's events about the pane), what it did (every key and paste it
// typed), what the agent's hooks said (its events on the log), with their
// timings and the versions of the CLI and the runtime — and replays them
// through the bridge's own decision code in `go test ./...`, with no CLI
// installed.
//
// Recording. Every screen read and keystroke crosses herdr's socket, so a
// Proxy interposed on it (Interpose: the server's socket is moved aside and
// the proxy listens at its path, so the panes, their hooks and the bridge's
// /proc checks all see the path they expect) captures the wire; Build turns
// the wire and the agent's log events into a Recording: screens
// deduplicated, paths, ids and times scrubbed (Scrubber), gzipped JSON in
// testdata/<kind>/<cli version>/<scenario>.json.gz. The recording tests
// with the real CLIs live in cmd/fleetd (record_*_test.go), which stands
// up the fake model API, the fake herdr and `fleetd up`.
//
// Replay. Replay feeds a recording's screens, in order, to the kind's own
// functions — herdrbridge.ScreenReadiness (the bridge's readiness decision
// on a screen), ParseComposer, Working, the DialogReader's ParseDialog,
// the Lander's Landed, the
// EnterDropper's Unsubmitted, the LazyClearer's Cleared — and its turns to
// the kind's typing plan (PlanText, PlanCommand), and compares the decision
// sequence with the one stored when it was recorded. It also checks the
// decisions against what the bridge did at the time: the typing it did
// follows the plan key for key, every typing came after a look that said
// ready, every attention about the screen after a look that said so.
//
// Why at the function level and not the whole bridge on a fake clock: the
// bridge's timing comes from its config (Poll, backoff, EnterDelay, the
// landing poll) and from goroutines that wait on timers and channels
// (delivery loop, watchers, settle, recovery); driving it from a recording
// would need a fake clock threaded through all of them and a fake herdr
// that answers each read with the screen of that moment — a change across
// the engine, which other work shares. The decisions that drift when a CLI
// changes (composer, readiness, landing, typing plan, dialogs, bash mode,
// a dropped Enter, a clear) are all pure functions of the screen and the
// text, so they replay exactly and fast, and the recorded keystrokes and
// events pin the engine's actions to them.
//
// Compare. Summary renders what a reviewer reads when a CLI is bumped (the
// versions, the status sequence, the hook payload fields, the composer's
// rows at each distinct decision, the decisions) and Diff compares two
// summaries line by line: `go test ./cmd/fleetd -run TestRecord -args
// -record=compare` re-records with the CLIs installed now and prints it;
// -record=write rewrites testdata.
//
// It imports herdrbridge (the kinds) and herdrbridge/herdrapi; nothing in
// fleetd imports it but tests.
package recording
