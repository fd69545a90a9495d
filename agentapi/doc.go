// Package agentapi runs and drives coder/agentapi servers: an HTTP API over
// a terminal emulator running one coding agent (Claude Code, Codex, …). It is
// the room fleetd's second agent runtime lives in, beside herdrbridge: where
// herdr is absent, each agent runs under its own `agentapi server`.
//
// It owns two things, both measured against agentapi 0.12.1 (commit
// 00ff7ff; docs/agentapi.md):
//
//   - Start launches `agentapi server` for one agent on a free port (another
//     port when agentapi cannot bind the one it got), waits until its API
//     answers, and gives back a Server: its Client, its pid and the agent's,
//     Done/Err when it exits (agentapi exits when its agent does), and Stop.
//     A missing binary or an unsupported version fails Start with
//     ErrNotInstalled or ErrVersion before anything runs.
//   - Client speaks agentapi's API: Status (running/stable), Messages, Send
//     (a "user" message, which agentapi types itself: a bracketed paste,
//     then Enter, retried every 3 s until the screen changes), SendRaw
//     (bytes written to the terminal as they are: what fleetd's own typing
//     plan uses), Screen (the terminal's text, from the hidden
//     /internal/screen stream) and the Events stream.
//
// What agentapi cannot give — a bound on the listen address (it listens on
// all interfaces, unauthenticated), a screen read without a stream, the
// agent's pid, a turn's reply other than a diff of the screen — is said in
// docs/agentapi.md with what fleetd does instead.
//
// It imports internal/proc (to find the agent process below agentapi) and
// nothing else of fleetd: the delivery engine that decides what to type
// and when sits above it, shared with herdr.
package agentapi
