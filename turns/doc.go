// Package turns is the one way a turn is queued: the lead shim, the
// orchestrator's LogSender and the router all go through it, and none of
// them builds a queued event by hand.
//
// It owns:
//
//   - targets: ParseTarget reads a "to" — an agent id, role:R or
//     session:S — for every sender and for plans; a session is resolved
//     to its agent by the orchestrator before anything is queued;
//   - what is typed: a text or a command, never both (CheckText); the
//     text rule of DESIGN.md, lifecycle.Normalize, with its
//     events.Normalization account; a text empty once normalised is
//     refused; Limits bound its size before the log would;
//   - the queued event: Queuer.Queue appends AgentQueued on the agent or
//     RoleQueued on the role, event id = correlation id = the turn id,
//     carrying from, text or command, normalisation, context selectors,
//     slice reference, job, task and deadline;
//   - the budget: a Queuer with a Budget (package budget's Checker) asks
//     it last, and a target out of budget is refused as a *BudgetError
//     (ErrBudgetExhausted: which limit, frees_at) with nothing appended.
//     Every path that types a turn — the shim's sends, a job's tasks, the
//     nudges — queues here, so none of them can go around a budget;
//   - the assignment of a role's turn: Assignment builds the AgentQueued
//     with AssignedFrom that the router appends, under AssignmentID.
//
// Refusals are the sentinels and typed errors of errors.go
// (ErrInvalidTarget as *TargetError, ErrTextAndCommand, ErrEmptyText,
// ErrTooLarge as *SizeError, ErrBudgetExhausted as *BudgetError): the shim maps them to its HTTP answers, the
// orchestrator wraps them.
//
// turns imports events and lifecycle only; never projections, jobs,
// roles, leadshim, orchestrator, router, herdrbridge or cmd. Who may send
// to whom (roster, roles, caps, commands a role allows) is the sender's
// to decide before it queues; whether the target's budget allows it is
// asked of the Budget the sender gives.
package turns
