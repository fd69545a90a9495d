package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/turns"
)

// LogSender is the default Sender: it queues the turn through
// turns.Queuer, the lead shim's own path — AgentQueued on the agent, or
// RoleQueued on fleet.role.<R>.queued, with ID = CorrelationID = turn id —
// and waits through the views' WaitTurn, so orchestrated turns and the
// lead's turns are one path.
type LogSender struct {
	log   events.Log
	turns TurnWaiter
	// NewID makes turn ids for messages without one; default ULIDs.
	NewID func() string
	// Budget is the queue's budget gate; nil: none. A target out of
	// budget is refused with a *turns.BudgetError and nothing is queued.
	Budget turns.Budget
}

var _ Sender = (*LogSender)(nil)

// NewLogSender returns a sender over log that waits through turns (a
// projections.Views).
func NewLogSender(log events.Log, turns TurnWaiter) *LogSender {
	return &LogSender{log: log, turns: turns, NewID: events.NewULIDSource(time.Now)}
}

// Send queues the message and returns the turn id. A refusal is one of
// package turns' errors (turns.ErrInvalidTarget for a session not resolved
// yet, turns.ErrEmptyText, turns.ErrTextAndCommand, a *turns.BudgetError),
// wrapped.
func (s *LogSender) Send(ctx context.Context, m Message) (string, error) {
	id := m.Turn
	if id == "" {
		id = s.NewID()
	}
	q, err := turns.Queuer{Log: s.log, Budget: s.Budget}.Queue(ctx, turns.Turn{ID: id, To: m.To, From: m.From, Text: m.Text, Command: m.Command,
		Context: m.Context, SliceRef: m.SliceRef, Job: m.Job, Task: m.Task, Deadline: m.Deadline})
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", m.To, err)
	}
	return q.ID, nil
}

// Wait blocks until the turn is final.
func (s *LogSender) Wait(ctx context.Context, turnID string) (lifecycle.Turn, error) {
	t, err := s.turns.WaitTurn(ctx, turnID, func(t lifecycle.Turn) bool { return t.State.Final() })
	if err != nil {
		return t, fmt.Errorf("wait for turn %s: %w", turnID, err)
	}
	return t, nil
}
