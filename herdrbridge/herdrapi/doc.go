// Package herdrapi is fleetd's client of the herdr terminal multiplexer's
// socket API (protocol 20): finding the socket, one typed call per
// connection, herdr's error codes translated to Go errors once, event
// subscriptions decoded into one Event type, and the wire types.
//
// The rules it encodes come from herdr's protocol (PROTOCOL.md in the
// shared herdr notes):
//
//   - herdr answers exactly one request per Unix-socket connection and then
//     closes it, so every Client call dials afresh; a subscription keeps its
//     own dedicated connection, and closing that connection is how it is
//     cancelled;
//   - every request carries a string id and params (even {}); a request
//     herdr cannot parse is answered with an empty id;
//   - herdr has no server-side timeout for most methods, so every call gets
//     a client deadline (DefaultTimeout when the caller gave none);
//   - lifecycle event lines are snake_case and type-tagged, per-pane lines
//     dotted and untagged: DecodeEvent accepts both.
//
// herdrapi imports no fleetd package: the bridge (herdrbridge), the hook
// (claudehook) and the CLI all talk to herdr through it.
package herdrapi
