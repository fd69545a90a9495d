package turns

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// Assignment builds the event that assigns a role's turn to one of its
// agents (the router's decision): the turn of queued, a RoleQueued, whole
// (text or command, normalisation account, context, slice, job, task,
// deadline) as an AgentQueued on agent with AssignedFrom = the role, id AssignmentID(turn),
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
		ID: AssignmentID(turn), Subject: agent, CorrelationID: turn, CausationID: queued.ID,
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
	var ms uint64
	if u, err := ulid.ParseStrict(turnID); err == nil {
		ms = u.Time()
	}
	h := sha256.Sum256([]byte("fleetd/router/assign/" + turnID))
	return ulid.MustNew(ms, bytes.NewReader(h[:])).String()
}
