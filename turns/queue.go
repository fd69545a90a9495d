package turns

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/events"
)

// Turn is one turn as its sender asks for it: the fields of the queued
// event before the target is checked and the text rule applied.
type Turn struct {
	// ID is the turn id, a ULID made by the sender (it records or answers
	// it before the turn is in the log): the queued event's id and
	// correlation id, so a re-sent Queue is an idempotent append.
	ID string
	// To is an agent id or role:R; a session:S target is resolved to its
	// agent first.
	To string
	// From names the sender ("lead", a main's agent id, …).
	From string
	// Text is the prompt; Queue types lifecycle.Normalize(Text).
	Text string
	// Command, instead of Text, is a slash command typed on purpose.
	Command string
	// Normalized is what the text rule already removed from Text, for a
	// sender that normalised it earlier (to refuse an empty text before
	// cutting a slice); Queue adds what it removes now.
	Normalized events.Normalization
	// Context are the selectors (keys, tag:T) the slice was cut by, or the
	// lead's selectors as they are when there is no job.
	Context []string
	// SliceRef is the id of the JobSliced event that recorded the slice
	// appended to Text.
	SliceRef string
	// Job and Task say which job (and task of its plan) the turn serves.
	Job, Task string
	// Deadline bounds the whole turn; zero: none.
	Deadline time.Time
	// Notify sends the turn's end to From's inbox (events.AgentInbox).
	Notify bool
	// Kind is events.TurnKindNudge for fleetd's own nudges.
	Kind string
}

// Queued is a turn in the log.
type Queued struct {
	// ID is the turn id.
	ID string
	// Target is where it was queued.
	Target Target
	// Seq is the stream sequence of its queued event: a reader waits for
	// its views to reach it before it reads the turn (read-your-writes).
	Seq uint64
}

// Queuer queues turns: the one way a turn enters the log, for the lead
// shim and the orchestrator alike, so a turn reads the same whoever sent
// it. Its zero Limits bound nothing beyond the log's limits; it is safe for
// concurrent use when Log is.
type Queuer struct {
	// Log is where the queued events go.
	Log events.Log
	// Source is the events' source (fleetd/<host>/<component>); empty: the
	// log's default.
	Source string
	// Limits bound the text before anything is appended.
	Limits Limits
	// Budget, when set, is asked before anything is appended: a target out
	// of budget is refused with a *BudgetError. Every sender that types a
	// turn (the shim's sends, a job's tasks, the nudges) queues through
	// here, so a budget holds on all of them without a copy per path.
	Budget Budget
}

// Budget judges a target against its budget before a turn is queued for
// it; package budget's Checker implements it.
type Budget interface {
	// Admit is nil when a new turn for to may be queued now, else a
	// *BudgetError saying which limit and when it frees up.
	Admit(to Target) error
}

// Queue checks t and appends its queued event: AgentQueued on
// fleet.agent.<id>.queued for an agent, RoleQueued on
// fleet.role.<R>.queued for a role, with event id = correlation id =
// t.ID. What it checks, in order: the target (ParseTarget; a session is
// refused), the text (CheckText) and its size (Limits.Check), then the
// target's budget (Budget.Admit). A refusal is
// one of the package's errors and appends nothing; an append error is the
// log's (events.ErrTooLarge, ErrStreamLost, …), wrapped.
func (q Queuer) Queue(ctx context.Context, t Turn) (Queued, error) {
	ev, to, err := q.event(t)
	if err != nil {
		return Queued{}, err
	}
	if q.Budget != nil {
		if err := q.Budget.Admit(to); err != nil {
			return Queued{}, err
		}
	}
	ack, err := q.Log.Append(ctx, ev)
	if err != nil {
		return Queued{}, fmt.Errorf("queue turn %s for %s: %w", t.ID, to, err)
	}
	return Queued{ID: t.ID, Target: to, Seq: ack.Seq}, nil
}

// event checks t and builds its queued event.
func (q Queuer) event(t Turn) (events.Event, Target, error) {
	to, err := ParseTarget(t.To)
	if err != nil {
		return events.Event{}, Target{}, err
	}
	if to.Kind == KindSession {
		return events.Event{}, Target{}, &TargetError{To: t.To, Kind: to.Kind, Err: errSession}
	}
	// The text rule holds on every way into the log (DESIGN.md).
	text, norm, err := CheckText(t.Text, t.Command)
	if err != nil {
		return events.Event{}, Target{}, err
	}
	if t.Command == "" {
		if err := q.Limits.Check(text); err != nil {
			return events.Event{}, Target{}, err
		}
	}
	if t.ID == "" {
		return events.Event{}, Target{}, ErrNoID
	}
	norm = addNorm(t.Normalized, norm)
	ev := events.Event{ID: t.ID, Source: q.Source, Subject: to.Name, CorrelationID: t.ID}
	if to.Kind == KindAgent {
		ev.Data = events.AgentQueued{From: t.From, Text: text, Command: t.Command, Normalized: norm, Context: t.Context,
			SliceRef: t.SliceRef, Deadline: t.Deadline, Job: t.Job, Task: t.Task, Notify: t.Notify, Kind: t.Kind}
	} else {
		ev.Data = events.RoleQueued{From: t.From, Text: text, Command: t.Command, Normalized: norm, Context: t.Context,
			SliceRef: t.SliceRef, Deadline: t.Deadline, Job: t.Job, Task: t.Task, Notify: t.Notify}
	}
	return ev, to, nil
}
