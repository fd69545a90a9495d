package turns

import (
	"fmt"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// Assignment builds the event that assigns a role's turn to one of its
// agents (the router's decision): the turn of queued, a RoleQueued, whole
// (text or command, normalisation account, context, slice, job, task,
// deadline) as an AgentQueued on agent with AssignedFrom = the role, id AssignmentID(turn)
// (for a turn back in its queue after its n-th release, an id derived from
// the turn and n, so the dedupe window does not drop the new assignment),
// correlation id the turn id and causation id queued's id. The caller
// sets Source and Time and appends it guarded by the agent's last
// sequence. An event that is not a RoleQueued is ErrNotRoleQueued.
func Assignment(queued events.Event, agent string) (events.Event, error) {
	rq, ok := queued.Data.(events.RoleQueued)
	if !ok {
		return events.Event{}, fmt.Errorf("assign event %s (%T): %w", queued.ID, queued.Data, ErrNotRoleQueued)
	}
	turn := lifecycle.TurnID(queued)
	return events.Event{
		ID: assignmentID(turn, rq.Requeue), Subject: agent, CorrelationID: turn, CausationID: queued.ID,
		Data: events.AgentQueued{
			From: rq.From, Text: rq.Text, Command: rq.Command, Normalized: rq.Normalized, Context: rq.Context,
			SliceRef: rq.SliceRef, Deadline: rq.Deadline, AssignedFrom: queued.Subject, Job: rq.Job, Task: rq.Task,
			Notify: rq.Notify,
		},
	}, nil
}

// AssignmentID is the id of the AgentQueued event that assigns role turn
// turnID: derived from the turn id (same timestamp, entropy from a hash),
// so every router instance and every retry writes the same event id and
// JetStream's dedupe stores the assignment once.
func AssignmentID(turnID string) string {
	return events.DerivedIDFrom(turnID, "fleetd/router/assign/"+turnID)
}

// QueuedAll is every agent's queued events: each turn put on an agent, by
// a router or by name, is one. A router's assignment is appended guarded
// by its last sequence (so no turn reached any agent since the router's
// views), and so is Cancellation's event (so no agent took the turn since
// the canceller's).
const QueuedAll = "fleet.agent.*.queued"

// assignmentID is the id of the assignment of a turn queued for its role
// after its n-th release (0: as first queued).
func assignmentID(turnID string, n int) string {
	if n > 0 {
		return attemptID("assign", turnID, n)
	}
	return AssignmentID(turnID)
}

// Cancellation builds the RoleCancelled that cancels role turn t while no
// agent has it (queued, unassigned), by whom. Its id is the id of the
// assignment the turn would get next (after its t.Releases-th release, as
// the router's RoleQueued of that attempt says), so JetStream's dedupe
// stores only the first of the two: a cancel stored first turns the
// router's assignment into a duplicate it stores nowhere, and an
// assignment stored first turns the cancel into one. Whoever appends it
// therefore reads a Duplicate ack as "not cancelled; look again". The
// caller sets Source and Time; a turn an agent has, or a final one, is
// ErrNotUnassigned.
func Cancellation(t lifecycle.Turn, by string) (events.Event, error) {
	if t.Role == "" || t.Agent != "" || t.State != lifecycle.StateQueued {
		return events.Event{}, fmt.Errorf("cancel turn %s (%s on %q, role %q): %w", t.ID, t.State, t.Agent, t.Role, ErrNotUnassigned)
	}
	return events.Event{
		ID: assignmentID(t.ID, t.Releases), Subject: t.Role, CorrelationID: t.ID,
		Data: events.RoleCancelled{By: by, Message: "cancelled by " + by},
	}, nil
}

// attemptID is the id of the event of kind for the n-th attempt of a
// turn: derived like AssignmentID, so every writer of the same step
// writes the same id and the log stores it once.
func attemptID(kind, turnID string, n int) string {
	return events.DerivedIDFrom(turnID, fmt.Sprintf("fleetd/%s/%s/%d", kind, turnID, n))
}

// Release builds the two events that send a role turn assigned to an
// agent, and never typed, back to its role's queue (t.Releasable): the
// AgentReleased on the agent, which the caller appends guarded by the
// agent's last sequence (so it excludes the gateway's AgentTyped), and
// then the RoleQueued that hands the turn to the role's router again
// (Requeue). Both ids are derived from the turn and the attempt, so two
// releasers of the same attempt store one of each. The caller sets
// Source and Time. A turn that is not releasable is ErrNotReleasable.
func Release(t lifecycle.Turn, reason, message string) (release events.Event, err error) {
	if !t.Releasable() {
		return events.Event{}, fmt.Errorf("release turn %s (%s on %q): %w", t.ID, t.State, t.Agent, ErrNotReleasable)
	}
	n := t.Releases + 1
	return events.Event{
		ID: attemptID("release", t.ID, n), Subject: t.Agent, CorrelationID: t.ID,
		Data: events.AgentReleased{Role: t.Role, Attempt: n, Reason: reason, Message: message},
	}, nil
}

// Requeue builds the RoleQueued that puts a released turn back in its
// role's queue (after its t.Releases-th release), carrying the turn whole
// as it was queued, with correlation id the turn id. Appending it again is
// harmless: the dedupe window stores it once, and a router that finds the
// turn assigned or final acks it and moves on.
func Requeue(t lifecycle.Turn) (events.Event, error) {
	if t.Releases == 0 || t.Role == "" {
		return events.Event{}, fmt.Errorf("requeue turn %s: %w", t.ID, ErrNotReleasable)
	}
	return events.Event{
		ID: attemptID("requeue", t.ID, t.Releases), Subject: t.Role, CorrelationID: t.ID,
		Data: events.RoleQueued{
			From: t.From, Text: t.Text, Command: t.Command, Normalized: t.Normalized, Context: t.Context,
			SliceRef: t.SliceRef, Deadline: t.Deadline, Job: t.Job, Task: t.Task, Notify: t.Notify,
			Requeue: t.Releases,
		},
	}, nil
}
