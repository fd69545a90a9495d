// Package herdrtest is a protocol-faithful fake of the herdr terminal
// multiplexer's socket API (protocol 20, herdr 0.8.0), for fleetd's tests
// and for `fleetd demo`. Panes are real: each runs a real process in a PTY
// (github.com/creack/pty) behind a real terminal emulator
// (github.com/charmbracelet/x/vt, Cols×Rows), as herdr runs one, so a
// program that redraws with cursor movement in the alternate screen reads
// back as it looks, and what herdr types is what the program reads.
//
// Start it in a test with Start(tb, Config{}), which also checks every
// request and every written line against herdr's JSON schema
// (../shared/herdr/herdr-api.schema.json beside the repository, or
// $FLEET_HERDR_SCHEMA) and fails the test on a violation; where the schema
// is absent (a clone of the repository alone) herdrschema.Schema skips the
// test, and CI makes that a failure. In a program,
// New(Config{SocketPath: p}) then Start(ctx) and Close().
//
// What it reproduces (PROTOCOL.md §7 and the notes there):
//
//   - one request per connection; a 5 s limit for the first line and a
//     1 MiB cap; a blank line is ignored; an unparseable request is
//     answered {"id":"","error":{"code":"invalid_request",…}};
//   - herdr's pane environment (HERDR_SOCKET_PATH, HERDR_ENV=1,
//     HERDR_WORKSPACE_ID, HERDR_TAB_ID, HERDR_PANE_ID, HERDR_BIN_PATH when
//     configured) applied over the caller's env, which is checked
//     (invalid_env);
//   - pane.send_text raw; pane.send_keys one write per key (invalid_key for
//     unknown names and prefix+…); pane.send_input one write, bracketed
//     only while the program has DECSET 2004 on; agent.prompt writes the
//     (bracketed) text, answers, and writes Enter 300 ms later as a
//     separate write;
//   - an event hub of the last 512 lifecycle events, replayed to every new
//     subscriber; each subscription entry emits at most one event per
//     PollInterval; lifecycle lines in the snake_case tagged format,
//     pane.agent_status_changed and pane.output_matched in the dotted
//     untagged one; a subscriber that stops reading for 5 s is dropped;
//   - a process that dies produces pane_exited, then pane_closed (and
//     tab_closed/workspace_closed when it was the last pane).
//
// Agent detection, every DetectInterval (100 ms), mirrors herdr's:
//
//   - the agent is named by the PTY's foreground process group (TIOCGPGRP
//     on the master): HERDR_AGENT=<name> in that process's environment (the
//     wrapper hint) wins, else a command name of claude or claude-code
//     means "claude". A change emits pane_agent_detected.
//   - the state of a detected agent comes from screen rules on the OSC
//     title and the rows of the screen the program shows, first match
//     wins: a title starting with a Braille spinner (U+2800–U+28FF) →
//     working; "esc to cancel" plus "enter to confirm|select" below the
//     last ❯ line → blocked; a ❯ prompt box, or nothing at all, → idle. working → idle is held until
//     IdleConfirmations (3) checks in a row agree.
//   - pane.report_agent from a source outside herdr: becomes the hook
//     authority and overrides the screen; state "done" is invalid_request;
//     a seq not above the source's last is ignored; herdr:claude (and any
//     herdr: source but herdr's full-lifecycle ones) is ignored; the
//     answer is ok in every ignored case.
//   - status: internal idle/working/blocked/unknown plus seen; done is idle
//     unseen. Any non-idle state marks seen; finishing a turn leaves it
//     unseen (done) unless Config.SeenOnCompletion; pane.focus and
//     agent.focus mark it seen with no hub event. Every internal change
//     bumps the global state_change_seq.
//
// The terminal:
//
//   - pane.read visible and detection return the current screen (the
//     alternate screen while the program uses it), one row per line with
//     trailing spaces trimmed, the last lines rows when lines is given;
//     recent and recent_unwrapped return the scrollback (up to 1000 rows;
//     none on the alternate screen) followed by the screen, the last 80
//     rows by default; truncated says rows were left out. format ansi (or
//     strip_ansi false) renders each row with its styles. Soft wraps are
//     not tracked, so recent_unwrapped reads as recent.
//   - the emulator answers the program's terminal queries (DA1, DSR/CPR,
//     DECRQM…) into its PTY, as a real terminal does. Those answers are
//     not herdr API input, so Input does not record them; answers the
//     program does not read are dropped once a small queue is full, so
//     they never hold up its output.
//   - Output keeps the raw bytes the program wrote, up to OutputLimit.
//
// It implements the methods fleetd uses; others answer not_implemented.
//
// herdrtest imports no fleetd package, and in particular not herdrbridge:
// it is an independent reading of herdr's protocol, so a shared
// misunderstanding shows up as a failing test. Test hooks (Input, Output,
// Calls, FailNext, KillSocket, Restart, SpawnPane) let tests observe and
// disturb it.
package herdrtest
