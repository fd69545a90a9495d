package turns_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/turns"
)

// newLog is a log over a fresh embedded NATS server, for one test.
func newLog(t *testing.T) (context.Context, events.Log) {
	_, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/turns"})
	return t.Context(), log
}

var newID = events.NewULIDSource(time.Now)

func TestQueueAppendsTheQueuedEvent(t *testing.T) {
	ctx, log := newLog(t)
	q := turns.Queuer{Log: log, Source: "fleetd/h1/shim"}
	deadline := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		turn    turns.Turn
		subject string
		want    any
	}{
		{name: "an agent target gets AgentQueued with every field",
			turn: turns.Turn{To: "w-1", From: "lead", Text: "do\r\nit", Context: []string{"spec", "tag:api"}, SliceRef: "01SLICE",
				Job: "j1", Task: "t1", Deadline: deadline},
			subject: "fleet.agent.w-1.queued",
			want: events.AgentQueued{From: "lead", Text: "do\nit", Normalized: events.Normalization{CarriageReturns: 1, RemovedBytes: 1},
				Context: []string{"spec", "tag:api"}, SliceRef: "01SLICE", Job: "j1", Task: "t1", Deadline: deadline}},
		{name: "a role target gets RoleQueued",
			turn:    turns.Turn{To: "role:w-local", From: "main-1", Text: "any worker", Deadline: deadline},
			subject: "fleet.role.w-local.queued",
			want:    events.RoleQueued{From: "main-1", Text: "any worker", Deadline: deadline}},
		{name: "a command turn carries the command and no text",
			turn:    turns.Turn{To: "w-1", Command: "/compact", Job: "j1", Task: "t2"},
			subject: "fleet.agent.w-1.queued",
			want:    events.AgentQueued{Command: "/compact", Job: "j1", Task: "t2"}},
		{name: "what the sender normalised before is added to what Queue removes",
			turn:    turns.Turn{To: "w-1", Text: "a\n\nctx\x1b[0m", Normalized: events.Normalization{ControlSequences: 1, RemovedBytes: 3}},
			subject: "fleet.agent.w-1.queued",
			want:    events.AgentQueued{Text: "a\n\nctx", Normalized: events.Normalization{ControlSequences: 2, RemovedBytes: 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.turn.ID = newID()
			got, err := q.Queue(ctx, tc.turn)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != tc.turn.ID || got.Seq == 0 || got.Target.String() != tc.turn.To {
				t.Errorf("queued %+v, want id %s at a sequence for %s", got, tc.turn.ID, tc.turn.To)
			}
			evs := eventstest.ReadAll(t, log, events.Query{Subjects: []string{tc.subject}})
			ev := evs[len(evs)-1]
			if ev.ID != tc.turn.ID || ev.CorrelationID != tc.turn.ID || ev.Seq != got.Seq || ev.Source != "fleetd/h1/shim" {
				t.Errorf("event id %s correlation %s seq %d source %s; want the turn id %s, seq %d", ev.ID, ev.CorrelationID, ev.Seq, ev.Source, tc.turn.ID, got.Seq)
			}
			if !reflect.DeepEqual(ev.Data, tc.want) {
				t.Errorf("data = %+v\nwant   %+v", ev.Data, tc.want)
			}
		})
	}
}

func TestQueueTheSameTurnTwiceStoresItOnce(t *testing.T) {
	ctx, log := newLog(t)
	q := turns.Queuer{Log: log}
	turn := turns.Turn{ID: newID(), To: "w-1", Text: "once"}
	for range 2 {
		if _, err := q.Queue(ctx, turn); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-1.queued"}})); n != 1 {
		t.Errorf("%d queued events, want 1", n)
	}
}

func TestQueueRefusesBeforeAppending(t *testing.T) {
	ctx, log := newLog(t)
	q := turns.Queuer{Log: log, Limits: turns.Limits{MaxText: 8}}
	for _, tc := range []struct {
		name string
		turn turns.Turn
		err  error
	}{
		{"no target is refused", turns.Turn{Text: "x"}, turns.ErrNoTarget},
		{"a bad agent id is refused", turns.Turn{To: "W 1", Text: "x"}, turns.ErrInvalidTarget},
		{"a session not resolved to its agent is refused", turns.Turn{To: "session:main-a", Text: "x"}, turns.ErrInvalidTarget},
		{"a text and a command are refused", turns.Turn{To: "w-1", Text: "x", Command: "/clear"}, turns.ErrTextAndCommand},
		{"an empty text is refused", turns.Turn{To: "w-1"}, turns.ErrEmptyText},
		{"a text empty once normalised is refused", turns.Turn{To: "w-1", Text: "\x1b[2J\r\n"}, turns.ErrEmptyText},
		{"a text over MaxText is refused", turns.Turn{To: "w-1", Text: strings.Repeat("a", 9)}, turns.ErrTooLarge},
		{"a turn without an id is refused", turns.Turn{To: "w-1", Text: "x"}, turns.ErrNoID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err != turns.ErrNoID {
				tc.turn.ID = newID()
			}
			if _, err := q.Queue(ctx, tc.turn); !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
	if n := len(eventstest.ReadAll(t, log, events.Query{Subjects: []string{events.SubjectAll}})); n != 0 {
		t.Errorf("%d events in the log, want none", n)
	}
}

// The log's own limits still hold behind the sender's: an append it
// refuses comes back as the log's error.
func TestQueueReturnsTheLogsRefusal(t *testing.T) {
	ctx, log := newLog(t)
	_, err := turns.Queuer{Log: log}.Queue(ctx, turns.Turn{ID: newID(), To: "w-1", Text: strings.Repeat("a", 2<<20)})
	if !errors.Is(err, events.ErrTooLarge) {
		t.Errorf("err = %v, want events.ErrTooLarge", err)
	}
}

func TestAssignment(t *testing.T) {
	turn := newID()
	deadline := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	queued := events.Event{ID: turn, Subject: "w-local", CorrelationID: turn, Data: events.RoleQueued{
		From: "lead", Text: "any worker", Context: []string{"spec"}, SliceRef: "01SLICE", Deadline: deadline, Job: "j1", Task: "t1"}}
	got, err := turns.Assignment(queued, "w-3")
	if err != nil {
		t.Fatal(err)
	}
	want := events.Event{ID: turns.AssignmentID(turn), Subject: "w-3", CorrelationID: turn, CausationID: turn, Data: events.AgentQueued{
		From: "lead", Text: "any worker", Context: []string{"spec"}, SliceRef: "01SLICE", Deadline: deadline, AssignedFrom: "w-local", Job: "j1", Task: "t1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assignment = %+v\nwant         %+v", got, want)
	}
	// A command turn stays one when it is assigned, with what the text
	// rule removed: the assignment alone describes the turn.
	cmd := events.Event{ID: turn, Subject: "w-local", Data: events.RoleQueued{Command: "/compact", Normalized: events.Normalization{RemovedBytes: 1}}}
	if got, err := turns.Assignment(cmd, "w-3"); err != nil || got.Data.(events.AgentQueued).Command != "/compact" ||
		got.Data.(events.AgentQueued).Normalized.RemovedBytes != 1 {
		t.Errorf("assignment of a command turn = %+v, %v", got.Data, err)
	}
	if _, err := turns.Assignment(events.Event{ID: turn, Subject: "w-1", Data: events.AgentQueued{Text: "x"}}, "w-3"); !errors.Is(err, turns.ErrNotRoleQueued) {
		t.Errorf("assignment of an AgentQueued: err = %v, want ErrNotRoleQueued", err)
	}
}

func TestAssignmentIDIsFixedByTheTurn(t *testing.T) {
	a, b := newID(), newID()
	if first, again := turns.AssignmentID(a), turns.AssignmentID(a); first != again {
		t.Errorf("two assignment ids for one turn: %s, %s", first, again)
	}
	if turns.AssignmentID(a) == turns.AssignmentID(b) || turns.AssignmentID(a) == a {
		t.Error("an assignment id shared with another turn or with the turn itself")
	}
	// The id is part of the log: routers of two versions must derive the
	// same one, or a turn would be assigned twice. This is the id every
	// version so far derived for this turn.
	if got, want := turns.AssignmentID("01JF6Z8K3Q4V5W6X7Y8Z9A0B1C"), "01JF6Z8K3Q1KD3XJDH7YQF40HJ"; got != want {
		t.Errorf("AssignmentID = %s, want %s (the id earlier versions wrote)", got, want)
	}
}

func TestAReleasedTurnGoesBackWholeUnderIdsOfItsAttempt(t *testing.T) {
	turn := newID()
	deadline := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	book := lifecycle.NewBook()
	queued := events.Event{ID: turn, Subject: "w", CorrelationID: turn, Seq: 1, Data: events.RoleQueued{From: "lead", Text: "again", Deadline: deadline, Job: "j1", Task: "t1", Notify: true}}
	book.Apply(queued)
	first, _ := turns.Assignment(queued, "w-1")
	first.Seq = 2
	book.Apply(first)

	tr, _ := book.Turn(turn)
	rel, err := turns.Release(tr, events.ReasonHostStale, "h1 silent")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := turns.Release(tr, events.ReasonAgentDied, "other releaser"); again.ID != rel.ID {
		t.Errorf("two releasers of one attempt wrote ids %s and %s", rel.ID, again.ID)
	}
	if rel.Subject != "w-1" || rel.CorrelationID != turn || rel.Data.(events.AgentReleased).Attempt != 1 {
		t.Errorf("release = %+v", rel)
	}
	rel.Seq = 3
	if _, ok := book.Apply(rel); !ok {
		t.Fatal("release not applied")
	}
	tr, _ = book.Turn(turn)
	rq, err := turns.Requeue(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := events.RoleQueued{From: "lead", Text: "again", Deadline: deadline, Job: "j1", Task: "t1", Notify: true, Requeue: 1}
	if rq.Subject != "w" || rq.CorrelationID != turn || rq.ID == turn || !reflect.DeepEqual(rq.Data, want) {
		t.Errorf("requeue = %+v, want data %+v", rq, want)
	}
	second, err := turns.Assignment(rq, "w-2")
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID || second.CorrelationID != turn {
		t.Errorf("second assignment %s %s: the dedupe window would drop it as the first (%s)", second.ID, second.CorrelationID, first.ID)
	}
	if _, err := turns.Release(tr, "x", ""); !errors.Is(err, turns.ErrNotReleasable) {
		t.Errorf("release of a turn back in its role's queue: %v, want ErrNotReleasable", err)
	}
}

// budgetFunc is a Budget of one function.
type budgetFunc func(turns.Target) error

func (f budgetFunc) Admit(to turns.Target) error { return f(to) }

// A target out of budget is refused after the other checks and before
// anything is appended; others are queued as before.
func TestQueueAsksTheBudgetBeforeAppending(t *testing.T) {
	ctx, log := newLog(t)
	frees := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	var asked []string
	q := turns.Queuer{Log: log, Budget: budgetFunc(func(to turns.Target) error {
		asked = append(asked, to.String())
		if to.Name == "spent" {
			return &turns.BudgetError{Target: to, Limit: "agent spent tokens_per_hour at 14300% (143 of 1)", FreesAt: frees}
		}
		return nil
	})}
	_, err := q.Queue(ctx, turns.Turn{ID: newID(), To: "spent", Text: "x"})
	be, ok := errors.AsType[*turns.BudgetError](err)
	if !errors.Is(err, turns.ErrBudgetExhausted) || !ok || !be.FreesAt.Equal(frees) ||
		!strings.Contains(err.Error(), "budget_exhausted: agent spent is out of budget") || !strings.Contains(err.Error(), "frees_at 2026-11-30T08:00:00Z") {
		t.Errorf("err = %v, want a BudgetError naming the agent, its limit and when it frees", err)
	}
	if _, err := q.Queue(ctx, turns.Turn{ID: newID(), To: "spent", Text: ""}); !errors.Is(err, turns.ErrEmptyText) {
		t.Errorf("an empty text to a spent agent: %v, want ErrEmptyText (the budget is asked last)", err)
	}
	if _, err := q.Queue(ctx, turns.Turn{ID: newID(), To: "role:w", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(asked, " "); got != "spent role:w" {
		t.Errorf("the budget was asked for %q, want spent then role:w", got)
	}
	if n := len(eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.>"}})); n != 0 {
		t.Errorf("%d agent events in the log, want none", n)
	}
}
