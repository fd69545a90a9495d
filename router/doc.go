// Package router is the role dispatcher: it turns each turn queued for a
// role (fleet.role.<R>.queued) into an AgentQueued{AssignedFrom: R} on one
// ready agent of that role, in strict FIFO order per role and within the
// role's fleet-wide concurrency cap (roles.Role.Cap).
//
// Exactly-once assignment, also with one router per host sharing the log:
//   - each role has one durable pull consumer (router-<R>) with
//     MaxAckPending 1, so fleet-wide only one router instance holds a
//     role's head of queue at a time; it keeps the message with
//     InProgress while it waits for a free agent and acks it only after
//     the assignment is stored;
//   - before every decision it waits until the projection has applied the
//     whole stream as it stood (Views.WaitSeq of the stream's last
//     sequence), so the views include every earlier assignment; a turn the
//     views show assigned or final is acked and skipped — that is what a
//     redelivery after a crash between append and ack finds;
//   - the AgentQueued event (built by turns.Assignment) has an id derived
//     from the turn id (turns.AssignmentID), so even a second decision
//     inside the dedupe window is stored as a duplicate, and
//     lifecycle.Book ignores a second assignment anyway;
//   - the append is guarded by the chosen agent's last sequence
//     (ExpectLastSeqFor on fleet.agent.<id>.>), so an agent that changed
//     after the views were read is re-read instead of double-booked.
//
// A role out of budget (Config.Budgets) has its head of queue held the
// same way until the budget frees: that is how a role with
// "budget_queue" makes its turns wait instead of being refused.
//
// Fail-over without double delivery: a role turn assigned to an agent that
// can no longer type it goes back to its role's queue, and a turn typed
// once is never typed again:
//   - the agent's own gateway releases the role turns queued on an agent
//     whose process died or whose pane exited; every router releases
//     those of agents whose host went stale (or that exited) — see
//     reclaim.go. A release is an AgentReleased on the agent's subject
//     (turns.Release), appended guarded by the agent's last sequence as
//     the releaser's views saw it, and the gateway's AgentTyped is
//     guarded the same way: whichever the log stores first wins, the
//     other is refused (ErrConcurrency) and decided again on the fresh
//     state. The gateway of a stale host that comes back at the moment
//     its turn is released therefore either typed it (and the release is
//     refused, or ignored by lifecycle.Book) or finds it released;
//   - after the release a RoleQueued with Requeue = the attempt number
//     (turns.Requeue) hands the turn to this package again; its id, the
//     release's and the next assignment's are derived from the turn id
//     and the attempt, so the dedupe window stores each step once but
//     does not drop the new assignment as a copy of the first. A
//     releaser that dies between the two appends is covered: any router
//     appends the missing RoleQueued when the views show the turn
//     released more often than requeued;
//   - turns sent to an agent by name are never released: they wait for
//     the agent's restart or fail after their deadline; typed turns of an
//     agent that died fail (agent_died), never retyped.
//
// Cancelled in the queue: a role turn no agent has yet is cancelled by a
// RoleCancelled on the role's subject (turns.Cancellation), whose event id
// is the id of the assignment the router would append next. A router that
// decided on views read before the cancel appends an assignment that the
// stream's dedupe stores nowhere (the append answers Duplicate, which the
// router takes as done; its views show the turn failed), and a cancel
// after an assignment is refused the same way, or by its guard on the
// agents' queues, and cancels the turn on its agent instead. No lock, no
// extra round trip on the router's path.
//
// A role turn whose deadline passes while it waits stays queued: no
// router records a failure for it. The lead's blocking call answers 504
// with the turn id to re-attach; the deadline rides on the AgentQueued, so
// the owning gateway can fail it once assigned.
//
// router imports events, lifecycle, projections, roles and turns, and
// internal/restart to run a role's worker again after a failure; never
// herdrbridge, leadshim or cmd.
package router
