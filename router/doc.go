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
// A role turn whose deadline passes while it waits stays queued: there is
// no agent subject to record a failure on, and the role subject carries
// only queued events. The lead's blocking call answers 504 with the turn
// id to re-attach; the deadline rides on the AgentQueued, so the owning
// gateway can fail it once assigned.
//
// router imports events, lifecycle, projections, roles and turns; never
// herdrbridge, leadshim or cmd.
package router
