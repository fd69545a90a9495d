// Package herdrbridge is the gateway's side of herdr: one Bridge per host,
// over the host's herdr (spoken to through herdrapi).
//
// A Bridge folds the log's agent events (lifecycle.Book) and, for the
// agents registered on its host:
//
//   - turns herdr's pane status events into AgentStatusChanged events;
//   - types each agent's next turn when it is ready — herdr's events (or
//     the agent's hooks, when herdr does not see it) say it is idle, its
//     Claude Code session is live, its pane's foreground is not a shell
//     (/proc), and its prompt box is on screen and empty (one pane.read):
//     AgentTyped first, guarded by the agent's last sequence, so nothing
//     is ever typed twice;
//   - types each text the way its Plan says (plan.go), so Claude Code's
//     composer keeps it exactly: one paste, pieces and cursor keys, or a
//     file handed over with an @ mention (docs/claude-composer.md);
//   - defers a turn herdr refused before writing (AgentDeferred), settles
//     a typed turn (hook, herdr or screen evidence; one extra Enter; else
//     indeterminate) and a submitted one whose reply is not coming
//     (unmatched_reply), and records why an agent needs attention;
//   - retires agents whose pane exited, survives herdr restarts by
//     re-snapshotting and re-syncing, and spawns (registering before it
//     launches) and adopts agent panes within the roles' subscription
//     boundary;
//   - gives the agents of a worktree role each their own git worktree
//     (package worktree) and launches a sandboxed role's agents into its
//     sandbox template (sandbox.go), without the boundary variables
//     herdr's own environment may leak, watching that the sandbox does
//     not exit at once; when such an agent exits, its worktree is removed
//     only if that loses nothing, and its exit says what became of it;
//   - stops an agent for good or restarts it afresh when a person asks
//     (Stop, Restart: control.go), recording who in its exit or its
//     restart's cause, through the same retirement and spawn as a pane
//     that went and a role's restart policy.
//
// It imports events, lifecycle, roles, worktree and herdrbridge/herdrapi,
// and nothing else of fleetd. It never imports herdrbridge/herdrtest outside tests (nor
// the reverse): the fake server is an independent implementation, so a
// shared misreading of the protocol shows up as a failing test instead of
// hiding in common code.
package herdrbridge
