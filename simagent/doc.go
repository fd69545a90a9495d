// Package simagent is a simulated Claude Code for fleetd's tests and demo:
// a program that runs in a herdr pane (a PTY), looks like Claude's TUI to
// herdr's screen rules, and fires the REAL `fleetd hook` commands with
// payloads shaped exactly like Claude Code 2.1.328's, so everything
// downstream of the pane — hooks, spool, events, turns — runs for real
// without a model.
//
// # Screen
//
// It enables bracketed paste (ESC[?2004h), sets the OSC title "✳ Claude
// Code" when idle and a Braille spinner title ("⠋ Claude Code") while
// working, and prints a "❯ " prompt line when idle. Launch it with
// HERDR_AGENT=claude in its environment so herdr (and herdrtest) detect it
// as a claude agent; fleetd's spawn passes that variable.
//
// # Input
//
// Input is read raw: typed text accumulates; bracketed-paste markers are
// stripped and a CR inside a paste is a newline of the text; a CR or LF
// that arrives alone (a separate Enter) submits, as does one that follows
// only control input in the same read; one that follows text in the same
// read is part of a paste burst, as in Claude. Backspace edits, Ctrl-C
// clears the line, other escape sequences are ignored.
//
// # Turns
//
// A submitted prompt gets a fresh prompt id and fires UserPromptSubmit;
// the agent works for Config.Think (or "[delay=500ms]" in the prompt),
// writes the transcript lines Claude writes (type user with promptId,
// type assistant with message.model and message.usage, type cost-state
// with totalCostUSD) and fires Stop with last_assistant_message =
// Config.ReplyPrefix + the prompt. "[fail]" ends the turn with StopFailure
// instead; "[block]" fires Notification (permission_prompt), shows a
// permission box and waits for Enter. "/exit" fires SessionEnd and exits.
//
// "[orchestrate: ARGS]" in a prompt makes the agent do a main's part the
// way Claude Code would through Bash: instead of thinking it runs
// `<Fleetd> orchestrate ARGS` (ARGS split on white space) in the pane's
// environment — FLEET_NATS_URL, FLEET_AGENT_ID (the sender), the herdr
// socket — and replies with the rollup the command printed, or with
// "orchestrate failed: …". So the recursion in tests is real: the same
// command runs at every tier.
//
// # Resume
//
// Config.Resume (`fleetd sim-agent --resume <id>`) continues a session as
// `claude --resume <id>` does: the session id is <id>, SessionStart
// carries source "resume", and the transcript <id>.jsonl grows.
// Token counts are deterministic (TokensFor) so tests can assert them.
//
// simagent imports no other fleetd package: it talks to fleetd only by
// running the fleetd binary, as Claude Code does.
package simagent
