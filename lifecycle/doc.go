// Package lifecycle is the turn state machine of DESIGN.md as a pure fold
// over events: queued → (assigned) → typed → submitted → replied | failed,
// with one turn in flight per agent, in queue order.
//
// The gateway's delivery loop, the projections and the lead shim all fold
// the same log through the same Book, so they cannot disagree about where a
// turn is. A Book does no I/O; it imports only events.
//
// Joining rules (the hooks of a pane do not always know the turn id):
//   - every turn event carries correlationid = turn id; a queued event with
//     none is its own turn (turn id = event id);
//   - a submitted or replied event joins the agent's turn in flight when
//     it has no correlation id, names that turn, or names a finished turn
//     (a hook that read a stale turn id); a prompt_id, once seen, must
//     match;
//   - a hook's submitted event whose prompt is not the turn's text (up to
//     whitespace or wrapping) belongs to another prompt — one Claude took
//     late, after its turn was given up on, or one typed by hand: its
//     prompt_id joins the turn's OtherPrompts, and no event with that
//     prompt_id joins the turn; a matching one names the prompt of a turn
//     already submitted on herdr's evidence;
//   - a replied event for an agent with no fleetd turn in flight (someone
//     typed into the pane by hand) changes no turn;
//   - a release (events.AgentReleased) sends a role turn that was assigned
//     to the agent and never typed back to its role's queue; it applies
//     only while the turn is queued on that agent and only as the turn's
//     next attempt. A typed turn is never released, and a released turn
//     is never typed on the agent it left: with the gateway's typed and
//     the release both appended guarded by the agent's last sequence, the
//     log holds at most one of them for that assignment, and the fold
//     ignores whichever comes second anyway. So a role turn is typed at
//     most once fleet-wide, whatever dies and whoever releases it;
//   - a role cancel (events.RoleCancelled) fails a role turn no agent has
//     yet; it applies only while the turn waits in its role's queue. Its
//     event id is the turn's next assignment's, so the log holds at most
//     one of the two;
//   - transitions are idempotent: a repeated or out-of-order event that
//     would move a turn backwards, or touch a finished turn, is ignored and
//     reported as not applied.
package lifecycle
