// Package herdrbridge owns fleetd's side of the herdr socket API: finding the
// socket, one typed call per connection, herdr error codes translated to Go
// errors, event subscriptions decoded into one Event type, and StripControl
// for text that will be typed into a pane.
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
// The client imports no other fleetd package, and herdrbridge never imports
// herdrbridge/herdrtest outside tests (nor the reverse): the fake server is
// an independent implementation, so a shared misreading of the protocol
// shows up as a failing test instead of hiding in common code.
package herdrbridge
