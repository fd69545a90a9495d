package lifecycle_test

import (
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

type script struct {
	t    *testing.T
	book *lifecycle.Book
	seq  uint64
	now  time.Time
}

func newScript(t *testing.T) *script {
	return &script{t: t, book: lifecycle.NewBook(), now: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)}
}

// apply folds an event and reports whether it changed a turn.
func (s *script) apply(id, subject, corr string, d events.Data) bool {
	s.seq++
	s.now = s.now.Add(time.Second)
	_, ok := s.book.Apply(events.Event{ID: id, Subject: subject, CorrelationID: corr, Data: d, Seq: s.seq, Time: s.now})
	return ok
}

func (s *script) state(id string) lifecycle.State {
	t, ok := s.book.Turn(id)
	if !ok {
		return ""
	}
	return t.State
}

func TestDirectTurnWalksTheLifecycle(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "hi", From: "lead"})
	if next, ok := s.book.Next("w1"); !ok || next.ID != "T1" {
		t.Fatalf("next = %v, %v; want T1", next.ID, ok)
	}
	s.apply("e2", "w1", "T1", events.AgentTyped{Pane: "w1:p1", Method: "agent.prompt"})
	if _, ok := s.book.Next("w1"); ok {
		t.Error("a turn is in flight: nothing should be next")
	}
	s.apply("e3", "w1", "", events.AgentSubmitted{Via: "hook", PromptID: "p1", SessionID: "s1"})
	s.apply("e4", "w1", "", events.AgentReplied{Reply: "hello", PromptID: "p1", Tokens: events.Tokens{In: 3, Out: 2}})
	got, _ := s.book.Turn("T1")
	if got.State != lifecycle.StateReplied || got.Reply != "hello" || got.PromptID != "p1" || got.SessionID != "s1" || got.Tokens.Out != 2 {
		t.Errorf("turn = %+v", got)
	}
	if got.Duration() != 3*time.Second {
		t.Errorf("duration %v, want 3s", got.Duration())
	}
	if s.book.Busy("w1") {
		t.Error("agent still busy after its only turn replied")
	}
}

func TestTurnsGoOutOneAtATimeInQueueOrder(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("T2", "w1", "T2", events.AgentQueued{Text: "two"})
	if q := s.book.Queue("w1"); len(q) != 2 || q[0] != "T1" || s.book.QueueLen("w1") != 2 {
		t.Fatalf("queue %v (QueueLen %d)", q, s.book.QueueLen("w1"))
	}
	if s.apply("e", "w1", "T2", events.AgentTyped{}) {
		t.Error("T2 typed ahead of T1")
	}
	s.apply("t1", "w1", "T1", events.AgentTyped{})
	s.apply("T3", "w1", "T3", events.AgentQueued{Text: "three"})
	if s.apply("t2", "w1", "T2", events.AgentTyped{}) {
		t.Error("T2 typed while T1 is in flight")
	}
	s.apply("r1", "w1", "T1", events.AgentReplied{Reply: "one done"})
	if next, ok := s.book.Next("w1"); !ok || next.ID != "T2" {
		t.Fatalf("next = %v; want T2", next.ID)
	}
	if !s.apply("t2", "w1", "T2", events.AgentTyped{}) {
		t.Error("T2 not typed after T1 replied")
	}
	if n := s.book.QueueLen("w1"); n != 1 {
		t.Errorf("QueueLen = %d; want 1 (T3)", n)
	}
	if n := s.book.QueueLen("nobody"); n != 0 {
		t.Errorf("QueueLen of an unknown agent = %d", n)
	}
}

func TestRoleTurnIsAssignedOnce(t *testing.T) {
	s := newScript(t)
	s.apply("R1", "w-local", "R1", events.RoleQueued{Text: "any"})
	if q := s.book.RoleQueue("w-local"); len(q) != 1 {
		t.Fatalf("role queue %v", q)
	}
	if !s.apply("a1", "w1", "R1", events.AgentQueued{Text: "any", AssignedFrom: "w-local"}) {
		t.Fatal("assignment not applied")
	}
	if s.apply("a2", "w2", "R1", events.AgentQueued{Text: "any", AssignedFrom: "w-local"}) {
		t.Error("a second assignment of the same turn was applied")
	}
	got, _ := s.book.Turn("R1")
	if got.Agent != "w1" || got.Role != "w-local" || got.AssignedAt.IsZero() || len(s.book.RoleQueue("w-local")) != 0 {
		t.Errorf("turn = %+v, role queue %v", got, s.book.RoleQueue("w-local"))
	}
	if q := s.book.Queue("w2"); len(q) != 0 {
		t.Errorf("w2 queue %v, want empty", q)
	}
}

// A role cancel fails a turn still in its role's queue, and only such a
// turn: one an agent has, one of another role or one already final is
// left as it is.
func TestARoleCancelFailsOnlyATurnInItsRolesQueue(t *testing.T) {
	s := newScript(t)
	s.apply("R1", "w-local", "R1", events.RoleQueued{Text: "waits"})
	s.apply("R2", "w-local", "R2", events.RoleQueued{Text: "taken"})
	s.apply("a2", "w1", "R2", events.AgentQueued{Text: "taken", AssignedFrom: "w-local"})
	if s.apply("c0", "other", "R1", events.RoleCancelled{By: "alice"}) {
		t.Error("a cancel on another role's subject was applied")
	}
	if !s.apply("c1", "w-local", "R1", events.RoleCancelled{By: "alice"}) {
		t.Fatal("the cancel of a waiting role turn was not applied")
	}
	got, _ := s.book.Turn("R1")
	if got.State != lifecycle.StateFailed || got.Reason != events.ReasonCancelled || got.Message != "cancelled by alice" || len(s.book.RoleQueue("w-local")) != 0 {
		t.Errorf("turn = %+v, role queue %v", got, s.book.RoleQueue("w-local"))
	}
	if s.apply("c1b", "w-local", "R1", events.RoleCancelled{By: "bob"}) {
		t.Error("a second cancel was applied")
	}
	if s.apply("late", "w2", "R1", events.AgentQueued{Text: "waits", AssignedFrom: "w-local"}) || s.book.Busy("w2") {
		t.Error("a cancelled role turn was put on an agent")
	}
	if s.apply("c2", "w-local", "R2", events.RoleCancelled{By: "alice"}) || s.state("R2") != lifecycle.StateQueued {
		t.Errorf("a role cancel changed a turn an agent has: %s", s.state("R2"))
	}
}

func TestAReleasedRoleTurnGoesBackToItsRoleAndIsTypedOnlyByItsNextAgent(t *testing.T) {
	s := newScript(t)
	s.apply("R1", "w", "R1", events.RoleQueued{Text: "first"})
	s.apply("R2", "w", "R2", events.RoleQueued{Text: "second"})
	s.apply("a1", "w1", "R1", events.AgentQueued{Text: "first", AssignedFrom: "w"})
	if s.apply("x0", "w1", "R1", events.AgentReleased{Role: "w", Attempt: 2, Reason: "agent_died"}) {
		t.Error("a release whose attempt skips one was applied")
	}
	if s.apply("x1", "w2", "R1", events.AgentReleased{Role: "w", Attempt: 1, Reason: "agent_died"}) {
		t.Error("a release on an agent the turn is not queued on was applied")
	}
	if !s.apply("x1", "w1", "R1", events.AgentReleased{Role: "w", Attempt: 1, Reason: events.ReasonHostStale}) {
		t.Fatal("release not applied")
	}
	got, _ := s.book.Turn("R1")
	if got.State != lifecycle.StateQueued || got.Agent != "" || got.Releases != 1 || got.ReleasedFrom != "w1" || got.Requeued != 0 {
		t.Errorf("released turn = %+v", got)
	}
	if q := s.book.RoleQueue("w"); len(q) != 2 || q[0] != "R1" {
		t.Errorf("role queue %v, want R1 back ahead of R2", q)
	}
	if s.book.Busy("w1") {
		t.Error("w1 still holds the released turn")
	}
	// The gateway of w1, coming back, cannot type it any more.
	if s.apply("t1", "w1", "R1", events.AgentTyped{}) {
		t.Error("a released turn was typed on the agent it was released from")
	}
	if s.apply("x1", "w1", "R1", events.AgentReleased{Role: "w", Attempt: 1}) {
		t.Error("a repeated release was applied")
	}
	if !s.apply("q1", "w", "R1", events.RoleQueued{Text: "first", Requeue: 1}) {
		t.Error("the requeue was not noted")
	}
	if got, _ := s.book.Turn("R1"); got.Requeued != 1 || got.State != lifecycle.StateQueued {
		t.Errorf("after the requeue: %+v", got)
	}
	if !s.apply("a2", "w2", "R1", events.AgentQueued{Text: "first", AssignedFrom: "w"}) {
		t.Fatal("the second assignment was not applied")
	}
	if !s.apply("t2", "w2", "R1", events.AgentTyped{}) {
		t.Fatal("the new agent could not type it")
	}
	// Typed: never released again, whoever asks.
	if s.apply("x2", "w2", "R1", events.AgentReleased{Role: "w", Attempt: 2}) {
		t.Error("a typed turn was released")
	}
	if got, _ := s.book.Turn("R1"); got.Agent != "w2" || got.State != lifecycle.StateTyped {
		t.Errorf("turn = %+v", got)
	}
}

func TestOnlyRoleTurnsAreReleased(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "by name"})
	if s.apply("x", "w1", "T1", events.AgentReleased{Role: "w", Attempt: 1}) {
		t.Error("a turn sent to the agent by name was released")
	}
	if q := s.book.Queue("w1"); len(q) != 1 {
		t.Errorf("queue %v", q)
	}
}

func TestOutOfOrderAndDuplicateEventsChangeNothing(t *testing.T) {
	s := newScript(t)
	for _, c := range []struct {
		name string
		fn   func() bool
	}{
		{"replied with no turn in flight", func() bool { return s.apply("x1", "w1", "", events.AgentReplied{Reply: "stray"}) }},
		{"typed for an unknown turn", func() bool { return s.apply("x2", "w1", "NOPE", events.AgentTyped{}) }},
		{"submitted with no turn in flight", func() bool { return s.apply("x3", "w1", "", events.AgentSubmitted{}) }},
		{"failed for an unknown turn", func() bool { return s.apply("x4", "w1", "NOPE", events.AgentFailed{Reason: "timeout"}) }},
	} {
		if c.fn() {
			t.Errorf("%s: applied", c.name)
		}
	}
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	if s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"}) {
		t.Error("duplicate queued applied")
	}
	if q := s.book.Queue("w1"); len(q) != 1 {
		t.Errorf("queue %v after a duplicate", q)
	}
	if s.apply("t1", "w2", "T1", events.AgentTyped{}) {
		t.Error("typed on another agent's turn applied")
	}
	s.apply("t1", "w1", "T1", events.AgentTyped{})
	if s.apply("t1", "w1", "T1", events.AgentTyped{}) {
		t.Error("second typed applied")
	}
	s.apply("r1", "w1", "T1", events.AgentReplied{Reply: "ok"})
	if s.apply("r1", "w1", "T1", events.AgentReplied{Reply: "again"}) || s.apply("f1", "w1", "T1", events.AgentFailed{Reason: "timeout"}) {
		t.Error("a final turn changed")
	}
	if got, _ := s.book.Turn("T1"); got.Reply != "ok" || got.State != lifecycle.StateReplied {
		t.Errorf("turn = %+v", got)
	}
}

func TestHookEventsJoinTheTurnInFlight(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("t1", "w1", "T1", events.AgentTyped{})
	s.apply("s1", "w1", "", events.AgentSubmitted{PromptID: "p1"})
	// A Stop for another prompt id is not this turn's reply; it is
	// counted as a stray, so the gateway can settle the turn.
	s.apply("r0", "w1", "", events.AgentReplied{Reply: "other", PromptID: "p0"})
	if got, _ := s.book.Turn("T1"); got.State != lifecycle.StateSubmitted || got.Reply != "" || got.StrayReplies != 1 {
		t.Errorf("after a reply with another prompt id: %+v, want submitted with one stray reply", got)
	}
	s.apply("r1", "w1", "T1", events.AgentReplied{Reply: "ok", PromptID: "p1"})
	s.apply("T2", "w1", "T2", events.AgentQueued{Text: "two"})
	s.apply("t2", "w1", "T2", events.AgentTyped{})
	// A hook that read a stale turn id (T1, final) still joins T2.
	if !s.apply("s2", "w1", "T1", events.AgentSubmitted{PromptID: "p2"}) || s.state("T2") != lifecycle.StateSubmitted {
		t.Errorf("stale-correlation submit did not join T2: %s", s.state("T2"))
	}
	// A StopFailure without a turn id fails the turn in flight.
	if !s.apply("f2", "w1", "", events.AgentFailed{Reason: "agent_error"}) || s.state("T2") != lifecycle.StateFailed {
		t.Errorf("failure did not join T2: %s", s.state("T2"))
	}
}

// Seen with the real Claude Code on a loaded machine: turn T1 was typed,
// Claude took it so late that T1 failed as indeterminate, and T2 was typed
// behind it. The hooks' events for T1's prompt (correlated with T2, the
// turn in flight by then) must not answer T2.
func TestALatePromptsEventsDoNotAnswerTheNextTurn(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "bravo: a task"})
	s.apply("t1", "w1", "T1", events.AgentTyped{})
	s.apply("f1", "w1", "T1", events.AgentFailed{Reason: events.ReasonIndeterminate})
	s.apply("T2", "w1", "T2", events.AgentQueued{Text: "charlie:\n  another   task"})
	s.apply("t2", "w1", "T2", events.AgentTyped{})
	s.apply("h2", "w1", "T2", events.AgentSubmitted{Via: "herdr"})

	if !s.apply("s1", "w1", "T2", events.AgentSubmitted{Via: "hook", PromptID: "p1", Prompt: "bravo: a task"}) {
		t.Error("the late prompt's id was not recorded on the turn in flight")
	}
	s.apply("r1", "w1", "T2", events.AgentReplied{Reply: "ECHO: bravo", PromptID: "p1"})
	if got, _ := s.book.Turn("T2"); got.State.Final() || got.Reply != "" || got.StrayReplies != 1 {
		t.Errorf("the late prompt's reply answered T2: %+v", got)
	}
	// T2's own prompt, wrapped and re-spaced by Claude, names T2's prompt.
	if !s.apply("s2", "w1", "T2", events.AgentSubmitted{Via: "hook", PromptID: "p2", SessionID: "s",
		Prompt: "<pasted_content>\ncharlie: another task\n</pasted_content>"}) {
		t.Error("T2's own submission did not name its prompt")
	}
	s.apply("r2", "w1", "T2", events.AgentReplied{Reply: "ECHO: charlie", PromptID: "p2"})
	got, _ := s.book.Turn("T2")
	if got.State != lifecycle.StateReplied || got.Reply != "ECHO: charlie" || got.PromptID != "p2" || got.SessionID != "s" ||
		len(got.OtherPrompts) != 1 || got.OtherPrompts[0] != "p1" {
		t.Errorf("T2 = %+v", got)
	}
	if s.state("T1") != lifecycle.StateFailed {
		t.Errorf("T1 = %s, want failed", s.state("T1"))
	}
}

func TestAReplyWithoutSubmitStillEndsTheTurn(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("t1", "w1", "T1", events.AgentTyped{})
	s.apply("r1", "w1", "", events.AgentReplied{Reply: "ok"})
	got, _ := s.book.Turn("T1")
	if got.State != lifecycle.StateReplied || got.SubmittedAt.IsZero() {
		t.Errorf("turn = %+v", got)
	}
}

func TestFailingAQueuedTurnFreesTheQueue(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("T2", "w1", "T2", events.AgentQueued{Text: "two"})
	s.apply("f1", "w1", "T1", events.AgentFailed{Reason: events.ReasonTimeout})
	if next, ok := s.book.Next("w1"); !ok || next.ID != "T2" {
		t.Errorf("next = %v; want T2", next.ID)
	}
	s.book.Forget("T1")
	if _, ok := s.book.Turn("T1"); ok {
		t.Error("forgotten final turn still held")
	}
	s.book.Forget("T2")
	if _, ok := s.book.Turn("T2"); !ok {
		t.Error("an open turn was forgotten")
	}
}

func TestADeferredTurnGoesBackToTheHeadOfItsQueue(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("T2", "w1", "T2", events.AgentQueued{Text: "two"})
	s.apply("t1", "w1", "T1", events.AgentTyped{Pane: "w1:p1", Method: "agent.prompt", Delivery: "paste"})
	if !s.apply("d1", "w1", "T1", events.AgentDeferred{Reason: "agent_not_ready", Message: "not the foreground process"}) {
		t.Fatal("deferred not applied")
	}
	got, _ := s.book.Turn("T1")
	if got.State != lifecycle.StateQueued || got.Deferrals != 1 || got.Method != "" || got.Reason != "agent_not_ready" {
		t.Errorf("after deferral: %+v", got)
	}
	if next, ok := s.book.Next("w1"); !ok || next.ID != "T1" {
		t.Errorf("next = %q, want T1 at the head again", next.ID)
	}
	if q := s.book.Queue("w1"); len(q) != 2 || q[0] != "T1" || q[1] != "T2" {
		t.Errorf("queue %v, want [T1 T2]", q)
	}
	// A book restored from a checkpoint keeps the deferred turn's place.
	restored := lifecycle.NewBook()
	for _, id := range []string{"T2", "T1"} {
		tt, _ := s.book.Turn(id)
		restored.Restore(tt)
	}
	if q := restored.Queue("w1"); len(q) != 2 || q[0] != "T1" {
		t.Errorf("restored queue %v, want T1 first", q)
	}
	// A deferral of a turn not in flight changes nothing.
	if s.apply("d2", "w1", "T2", events.AgentDeferred{Reason: "agent_not_ready"}) {
		t.Error("deferral of a queued turn applied")
	}
	s.apply("t1b", "w1", "T1", events.AgentTyped{Pane: "w1:p1", Method: "pane.send_input", Delivery: "paste"})
	s.apply("s1", "w1", "", events.AgentSubmitted{Via: "hook", PromptID: "p1", Prompt: "one"})
	s.apply("r1", "w1", "", events.AgentReplied{Reply: "done", PromptID: "p1"})
	if got, _ := s.book.Turn("T1"); got.State != lifecycle.StateReplied || got.Deferrals != 1 || got.Method != "pane.send_input" {
		t.Errorf("T1 = %+v", got)
	}
}

func TestTheExtraEnterIsPartOfTheTurn(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("t1", "w1", "T1", events.AgentTyped{Pane: "w1:p1", Method: "agent.prompt"})
	if !s.apply("e1", "w1", "T1", events.AgentTyped{Pane: "w1:p1", Method: "pane.send_keys", Enter: 1}) {
		t.Fatal("extra Enter not applied")
	}
	if got, _ := s.book.Turn("T1"); got.Enter != 1 || got.State != lifecycle.StateTyped || got.Method != "agent.prompt" {
		t.Errorf("T1 = %+v, want typed with one extra Enter", got)
	}
}

func TestHooksAreMatchedAgainstWhatWasTyped(t *testing.T) {
	s := newScript(t)
	// A file delivery: the hook reports the short prompt that handed the
	// file over, not the text.
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "/help me write the tests"})
	s.apply("t1", "w1", "T1", events.AgentTyped{Delivery: "file", File: ".fleet/inbox/T1.md", Prompt: "read @.fleet/inbox/T1.md"})
	s.apply("x1", "w1", "", events.AgentSubmitted{Via: "hook", PromptID: "p0", Prompt: "/help me write the tests"})
	s.apply("s1", "w1", "", events.AgentSubmitted{Via: "hook", PromptID: "p1", Prompt: "read @.fleet/inbox/T1.md"})
	if got, _ := s.book.Turn("T1"); got.PromptID != "p1" || len(got.OtherPrompts) != 1 {
		t.Errorf("T1 = %+v, want prompt p1 and p0 as another prompt", got)
	}
	// A command turn matches its command.
	s.apply("r1", "w1", "", events.AgentReplied{PromptID: "p1"})
	s.apply("T2", "w1", "T2", events.AgentQueued{Command: "/compact"})
	s.apply("t2", "w1", "T2", events.AgentTyped{Delivery: "command"})
	s.apply("s2", "w1", "", events.AgentSubmitted{Via: "hook", PromptID: "p2", Prompt: "/compact"})
	if got, _ := s.book.Turn("T2"); got.PromptID != "p2" || got.Kind() != lifecycle.KindCommand {
		t.Errorf("T2 = %+v", got)
	}
}

func TestSamePrompt(t *testing.T) {
	tests := []struct {
		name, prompt, expected string
		want                   bool
	}{
		{"equal", "a\n\tb", "a\n\tb", true},
		{"tabs expanded and trailing space trimmed", "a\n    b", "a\n\tb \n", true},
		{"format characters dropped", "zerowidth", "zero\u200bwidth", true},
		{"a collapsed paste", "\n\n<pasted_content id=\"f552\">\nline 1\nline 2\n</pasted_content id=\"f552\">\n", "line 1\nline 2", true},
		{"another text", "one", "two", false},
		{"a prefix is not the prompt", "fix the", "fix the tests", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lifecycle.SamePrompt(tt.prompt, tt.expected); got != tt.want {
				t.Errorf("SamePrompt(%q, %q) = %v, want %v", tt.prompt, tt.expected, got, tt.want)
			}
		})
	}
}

// A usage event stored before its reply (the reply sat in a spool, the
// usage did not) gives the turn in flight its tokens; the reply, usage
// pending, keeps them and ends the turn with its usage not pending. A
// usage event for another prompt touches nothing.
func TestAUsageBeforeItsReplyIsKeptByTheReply(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "hi", From: "lead"})
	s.apply("e2", "w1", "T1", events.AgentTyped{Pane: "p1"})
	s.apply("e3", "w1", "", events.AgentSubmitted{Via: "hook", PromptID: "p1"})
	if s.apply("e4", "w1", "", events.AgentUsage{PromptID: "other", Tokens: events.Tokens{In: 1}}) {
		t.Error("a usage event of another prompt changed a turn")
	}
	tok := events.Tokens{In: 50, Out: 5}
	if !s.apply("e5", "w1", "", events.AgentUsage{PromptID: "p1", Model: "m", Tokens: tok, CostUSD: 0.1}) {
		t.Fatal("the usage of the turn in flight was not applied")
	}
	s.apply("e6", "w1", "", events.AgentReplied{Reply: "ok", PromptID: "p1", UsagePending: true})
	tu, ok := s.book.Turn("T1")
	if !ok || tu.State != lifecycle.StateReplied || tu.Tokens != tok || tu.CostUSD != 0.1 || tu.Model != "m" || tu.UsagePending {
		t.Errorf("turn %+v, want replied with the usage that came first", tu)
	}
}
