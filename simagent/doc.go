// Package simagent is a simulated Claude Code for fleetd's tests and demo:
// a program that runs in a herdr pane (a PTY), looks like Claude's TUI to
// herdr's screen rules, and fires the REAL `fleetd hook` commands with
// payloads shaped exactly like Claude Code 2.1.328's, so everything
// downstream of the pane — hooks, spool, events, turns — runs for real
// without a model.
//
// The screen and the prompt input reproduce what Claude Code 2.1.328 was
// measured to do in a real terminal, traps included, so that fleetd's
// tests against the simulator fail where fleetd would fail against Claude.
//
// # Screen
//
// It enables bracketed paste (ESC[?2004h) before anything else, sets the
// OSC title "✳ Claude Code" when idle and a Braille spinner title ("⠋
// Claude Code") while working, and keeps Claude's prompt box at the
// bottom: a rule of U+2500 as wide as the terminal (TIOCGWINSZ, 80 when
// unknown), "❯" and a no-break space before the composer's text
// (continuation lines indented two spaces), a rule, and the footer "  ⏵⏵
// auto mode on (shift+tab to cycle)". In bash mode the prompt character is
// "!" and the footer "  ! for shell mode". Past prompts ("❯ …") and
// replies ("● …") scroll above the box; a turn at work shows a status row
// above it; a dialog (the shortcuts, /help, a permission prompt) replaces
// it. Only the box is redrawn — cursor up to its top, clear to the end of
// the screen, draw — and only when it changed. The box first shows once
// the session has started: it is the sign of readiness. Launch the agent
// with HERDR_AGENT=claude in its environment so herdr (and herdrtest)
// detect it as a claude agent; fleetd's spawn passes that variable.
//
// # Input
//
// A bracketed paste is inserted at the cursor with tabs made four spaces,
// format characters (zero-width spaces and joiners, direction marks, BOM,
// soft hyphen) dropped and line or paragraph separators made newlines. A
// paste over 800 UTF-16 code units or with more than two newlines shows as
// "[Pasted text #N +K lines]" and is submitted as
// "\n\n<pasted_content id=\"XXXX\">\n…\n</pasted_content id=\"XXXX\">\n".
// A "!" typed or pasted first into an empty prompt switches to bash mode
// (Backspace on an empty composer leaves it); a "?" typed into an empty
// composer opens the shortcuts until Esc. Enter (CR) submits unless it
// follows a backslash, which becomes a newline; a raw LF submits too, so a
// multi-line text typed without bracketed paste runs early, as in Claude.
// Home/End, ctrl+a/ctrl+e, the arrows, Delete, Backspace and ctrl+u edit;
// ctrl+c clears the composer (with nothing to clear it does not cut a turn
// short). Prompts submitted while a turn works are queued and run in order.
//
// Submitting trims trailing white space as JavaScript's trimEnd does. In
// bash mode the command runs in the agent's directory through /bin/sh,
// bypassing the model: no prompt hooks. A value that starts with
// "/name" (letters, digits, ":", "_", "-") then white space or the end is
// a slash command, never a turn: /clear ends the session (SessionEnd,
// reason "clear") and starts a new one with a new id and transcript
// (SessionStart, source "clear"); /compact works a moment and fires
// SessionStart with source "compact" in the same session; /exit fires
// SessionEnd and exits; /help shows the help until Esc; any other name is
// refused as an unknown command. "/tmp/x.go is broken" is a prompt.
//
// # Turns
//
// A submitted prompt gets a fresh prompt id and fires UserPromptSubmit
// without waiting for it, as Claude Code runs fleetd's settings (an async
// hook), and the hooks after it in the turn with --after-prompt
// (Config.SyncHooks: every hook waited for, as a plain settings file's);
// the agent works for Config.Think (or "[delay=500ms]" in the prompt),
// writes the transcript lines Claude writes (type user with promptId,
// type assistant with message.model and message.usage, type cost-state
// with totalCostUSD) and fires Stop with last_assistant_message =
// Config.ReplyPrefix + the prompt. "[fail]" ends the turn with StopFailure
// instead; "[block]" fires Notification (permission_prompt) and covers the
// box with a permission dialog laid out as Claude Code's Bash dialog: Enter,
// "1" or "2" answer it yes and the turn goes on; "3" or Esc answer no, and
// the turn is interrupted as Claude Code's is (no reply, no Stop hook).
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
