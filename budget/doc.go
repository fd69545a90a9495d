// Package budget judges agents and roles against the budgets of the
// roles file (roles.Budget: tokens and USD per hour and per day, a
// role's shared "budget" and each agent's "agent_budget") using the
// usage the projection folds from the log (projections.Views.Usage), and
// writes the budget_warning events.
//
// The numbers are the projection's, so every host of a cluster judges
// the same usage: a budget holds fleet-wide. Only the clock is each
// host's own.
//
// Checker answers "may a new turn go?" for the router and, as
// turns.Queuer's Budget (Admit), for every path that queues a turn — the
// shim's sends, a job's tasks, the nudges — and fills the roster's Budget
// field. Warner writes one
// budget_warning per crossing (80%, then 100%) fleet-wide: an agent's by
// the gateway that owns the agent (the only one whose credentials may
// write on its subject), a role's by whichever gateway sees it first —
// each append expects the subject's last sequence it read, so a second
// host's is refused, and its id is derived from that sequence, so a retry
// is a duplicate.
//
// budget imports events, projections, roles and turns (for the target and
// the refusal Admit speaks in); never leadshim, router or cmd, which declare the narrow interfaces they need of it.
package budget
