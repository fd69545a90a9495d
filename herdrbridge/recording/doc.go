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
// testdata/<kind>/<cli version>/<scenario>.json.gz. A scenario begins
// where the last one left the agent, so Before folds the wire and the log
// events that came before it into its first steps, at time 0: what the
// bridge had been told of the agent's statuses then (herdr's last status
// of its pane and the agent herdr names there, the hooks' last status,
// whether they reported its session, whether herdr refuses agent.prompt).
// The recording tests with the real CLIs live in cmd/fleetd
// (record_*_test.go), which stands up the fake model API, the fake herdr
// and `fleetd up`.
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
// The bridge's typing gate and its timed decisions replay on a fake
// clock, the recording's own times: each look the bridge took to decide
// on typing (a turn waiting, none in flight) goes through
// herdrbridge.Settle (type; wait; call for a person — at once for a draft
// or bash mode, for a missing prompt box only once it stayed away
// AttentionAfter since the first look that missed it) and the statuses
// so far through Statuses.Hold (what herdr's and the hooks' statuses
// allow); each look while Enter waits after the text, and each Enter (and
// the Left before it), through herdrbridge.EnterAfter (the text landed,
// the fixed pause passed, LandTimeout). The decisions hold them
// ("settle=", "statuses=", "enter=", a line per Enter saying what let it
// go), and the checks: a typing the statuses held back; an attention the
// gate did not call for yet, or one it called for that the bridge did not
// record before its next look; an Enter before EnterAfter let it go, or a
// look after it did. Recorded times are the proxy's and the log's, a few
// milliseconds from the bridge's own reads of its clock: a decision that
// changes within clockSlack of a recorded time is taken either way. The
// statuses start from the recording's steps at time 0 and are folded
// from herdr's own word about the agent's pane (its status events, its
// answers when the bridge asked — as it does when the hooks say a turn is
// over and herdr does not yet — and its agent detections) and the log's
// status, session, registered and deferred events, as the bridge folds
// them; each look that decided on typing says what they allowed
// ("statuses=open", or held and why). A recording made before there were
// steps at time 0 does not tell what herdr and the hooks said before it
// began: each status it has not told yet is taken both ways, and
// "statuses=" shows only where that decides.
//
// Why at the function level and not the whole bridge on a fake clock: the
// bridge's pacing comes from goroutines that wait on timers and channels
// (delivery loop, watchers, backoff, recovery); driving them from a
// recording would need a fake clock threaded through all of them and a
// fake herdr that answers each read with the screen of that moment — a
// change across the engine, which other work shares. The decisions that
// drift when a CLI changes (composer, readiness, landing, typing plan,
// dialogs, bash mode, a dropped Enter, a clear) are pure functions of the
// screen and the text, and the typing gate's (Settle, Statuses.Hold,
// EnterAfter) of those, the statuses and the time given, which the bridge
// takes from its clock and the replay from the recording: they replay
// exactly and fast, and the recorded keystrokes and events pin the
// engine's actions to them. Not replayed: the pacing of looks (backoff,
// Poll), StartupGrace (no scenario types before a session started), and
// the timeouts no recorded scenario reaches (SubmitTimeout's Enter once
// more, an EnterDropper's early Enter, the graces that settle a turn
// whose reply never came).
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
