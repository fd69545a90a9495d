// Package herdrbridge owns fleetd's side of the herdr socket API: finding the
// socket, one typed call per connection, herdr error codes translated to Go
// errors, event subscriptions decoded into one Event type; and the gateway's
// bridge, which types turns into panes (text made safe by lifecycle.Normalize
// and delivered so Claude Code's composer keeps it exactly: see delivery.go).
//
// The rules it encodes come from herdr's protocol 20 (see PROTOCOL.md in the
// shared herdr notes):
//
//   - herdr answers exactly one request per Unix-socket connection and then
//     closes it, so every Client call dials afresh; a subscription keeps its
//     own dedicated connection, and closing that connection is how it is
//     cancelled.
//   - herdr sets no server-side timeout on most methods, so every call carries
//     a deadline: the caller's, or the Client's default.
//   - every request has a string id and an explicit "params":{} and leaves
//     optional fields out rather than sending zero values, so that what we
//     send validates against herdr's published schema.
//   - event lines arrive in two shapes (lifecycle "pane_created" with a tagged
//     data object, and per-pane "pane.agent_status_changed" with untagged
//     data); both become an Event whose Kind uses the dotted spelling of the
//     subscription names.
//
// On top of the client sits the Bridge, one per gateway: it folds the
// log's agent events (lifecycle.Book) and, for the agents registered on its
// host, turns herdr pane status into AgentStatusChanged events, types each
// agent's next turn when herdr shows it idle or done (AgentTyped first,
// guarded by the agent's last sequence, so nothing is ever typed twice),
// settles typed turns (hook or herdr evidence, one extra Enter, else
// indeterminate), retires agents whose pane exited, survives herdr
// restarts by re-snapshotting and re-syncing, and spawns and adopts agent
// panes within the roles' subscription boundary.
//
// The client files import no other fleetd package; the bridge imports
// events, lifecycle and roles, and nothing else of fleetd. herdrbridge
// never imports herdrbridge/herdrtest outside tests (nor the reverse): the fake server is
// an independent implementation, so a shared misreading of the protocol
// shows up as a failing test instead of hiding in common code.
package herdrbridge
