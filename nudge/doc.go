// Package nudge tells idle mains that their inbox holds messages. A main
// is a Claude Code session, an MCP client: nothing reaches it unless it
// asks, and between turns it asks nothing. So when a message lands in the
// inbox of an agent whose role reads by pull (roles.Role.Inbox), the
// nudger of the agent's host queues one short turn of kind nudge
// (events.TurnKindNudge) telling it to call its inbox tool. The turn takes
// the normal turn path — the gateway types it only when the agent is
// idle, one turn per pane at a time — and the nudger queues one only when
// the agent is ready (idle, nothing queued or in flight), so a main is
// never nudged while it works and never has two nudges outstanding. A
// message is nudged for once: a main that ignores a nudge is nudged again
// only when another message arrives. A nudge is a turn like any other —
// the model answers it, reading its inbox and working on what it finds —
// so it is queued through the budget gate (Config.Budget): an agent out
// of budget is not nudged, its messages wait in its inbox, and it is
// considered again when its budget frees.
//
// nudge imports events, lifecycle, projections, roles and turns, and
// internal/restart to follow the log again after a failure; the inboxes
// it reads through a small interface (inbox.Inboxes has it).
package nudge
