// Package inbox owns the durable per-agent inboxes of agents that read by
// pull — Claude Code mains and leads, which are MCP clients and cannot be
// called into. A message is an events.AgentInbox event on
// fleet.agent.<agent>.inbox (the log is the inbox: `nats sub
// 'fleet.agent.*.inbox'` taps them all), and each agent reads its own
// through one durable JetStream consumer, inbox-<agent>, with explicit
// acknowledgement: a message pulled and not acknowledged comes back after
// the ack wait, and nothing is lost when fleetd (or its NATS server)
// restarts, because the consumer's position lives in the server.
//
// DESIGN.md asks for durables only for work that must be acknowledged: an
// inbox is exactly that, one consumer per reading agent, not per
// aggregate. Consumers are finite (FLEET's limit counts every reader), so
// reading opens nothing: Open makes an inbox, for whom its caller allows
// (the shim: agents of the roster and callers with the bearer token), and
// only while FLEET holds under half its consumer limit. An inbox no one
// pulls from for InactiveThreshold (days) is deleted by nats-server; its
// messages stay in the log, and Open makes it again from after the
// agent's last acknowledged-through record (events.AgentInboxRead, which
// Ack writes as the ack floor moves), so nothing acknowledged is handed
// out twice and nothing unacknowledged is lost.
//
// inbox imports events and lifecycle, and internal/restart to run its
// notifier again after a failure.
package inbox
