package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// LogSender is the default Sender: it appends the turn's queued event
// exactly as the lead shim does — AgentQueued on the agent, or RoleQueued
// on fleet.role.<R>.queued, with ID = CorrelationID = turn id — and waits
// through the views' WaitTurn, so orchestrated turns and the lead's turns
// are one path.
type LogSender struct {
	log   events.Log
	turns TurnWaiter
	// NewID makes turn ids for messages without one; default ULIDs.
	NewID func() string
}

var _ Sender = (*LogSender)(nil)

// NewLogSender returns a sender over log that waits through turns (a
// projections.Views).
func NewLogSender(log events.Log, turns TurnWaiter) *LogSender {
	return &LogSender{log: log, turns: turns, NewID: events.NewULIDSource(time.Now)}
}

// Send appends the queued event and returns the turn id.
func (s *LogSender) Send(ctx context.Context, m Message) (string, error) {
	t, err := ParseTarget(m.To)
	if err != nil {
		return "", err
	}
	// The text rule holds on every way into the log (DESIGN.md).
	text, norm := lifecycle.Normalize(m.Text)
	switch {
	case m.Command != "" && m.Text != "":
		return "", fmt.Errorf("send to %s: %w", m.To, ErrTextAndCommand)
	case m.Command == "" && strings.TrimSpace(text) == "":
		return "", fmt.Errorf("send to %s: %w", m.To, ErrEmptyText)
	}
	id := m.Turn
	if id == "" {
		id = s.NewID()
	}
	ev := events.Event{ID: id, Subject: t.Name, CorrelationID: id}
	switch t.Kind {
	case TargetAgent:
		ev.Data = events.AgentQueued{From: m.From, Text: text, Command: m.Command, Normalized: norm, Context: m.Context, SliceRef: m.SliceRef,
			Deadline: m.Deadline, Job: m.Job, Task: m.Task}
	case TargetRole:
		ev.Data = events.RoleQueued{From: m.From, Text: text, Command: m.Command, Normalized: norm, Context: m.Context, SliceRef: m.SliceRef,
			Deadline: m.Deadline, Job: m.Job, Task: m.Task}
	default:
		return "", fmt.Errorf("%w %q: a sender takes an agent or role:R; resolve sessions first", ErrInvalidTarget, m.To)
	}
	if _, err := s.log.Append(ctx, ev); err != nil {
		return "", fmt.Errorf("send to %s: %w", m.To, err)
	}
	return id, nil
}

// Wait blocks until the turn is final.
func (s *LogSender) Wait(ctx context.Context, turnID string) (lifecycle.Turn, error) {
	t, err := s.turns.WaitTurn(ctx, turnID, func(t lifecycle.Turn) bool { return t.State.Final() })
	if err != nil {
		return t, fmt.Errorf("wait for turn %s: %w", turnID, err)
	}
	return t, nil
}
