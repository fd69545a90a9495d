package lifecycle

import (
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/fleetd/fleetd/events"
)

// Book folds turn events into every turn's state and each agent's queue.
// It is not safe for concurrent use; its owner serialises Apply.
type Book struct {
	turns  map[string]*Turn
	agents map[string]*agentTurns
	roles  map[string][]string
}

type agentTurns struct {
	queue    []string // queued turn ids, in queue order
	inFlight string   // typed or submitted turn id
}

// NewBook returns an empty book.
func NewBook() *Book {
	return &Book{turns: map[string]*Turn{}, agents: map[string]*agentTurns{}, roles: map[string][]string{}}
}

func (b *Book) agent(id string) *agentTurns {
	a, ok := b.agents[id]
	if !ok {
		a = &agentTurns{}
		b.agents[id] = a
	}
	return a
}

// Turn returns a copy of the turn with id.
func (b *Book) Turn(id string) (Turn, bool) {
	t, ok := b.turns[id]
	if !ok {
		return Turn{}, false
	}
	return *t, true
}

// Len is the number of turns the book holds.
func (b *Book) Len() int { return len(b.turns) }

// Turns calls fn for every turn (copies), in no particular order.
func (b *Book) Turns(fn func(Turn) bool) {
	for _, t := range b.turns {
		if !fn(*t) {
			return
		}
	}
}

// Queue is the agent's queued turn ids in delivery order.
func (b *Book) Queue(agent string) []string {
	if a, ok := b.agents[agent]; ok {
		return slices.Clone(a.queue)
	}
	return nil
}

// QueueLen is how many turns the agent has queued: Queue's length
// without the copy, for folds that only count them.
func (b *Book) QueueLen(agent string) int {
	if a, ok := b.agents[agent]; ok {
		return len(a.queue)
	}
	return 0
}

// InFlight is the agent's typed or submitted turn, if any.
func (b *Book) InFlight(agent string) (Turn, bool) {
	a, ok := b.agents[agent]
	if !ok || a.inFlight == "" {
		return Turn{}, false
	}
	return b.Turn(a.inFlight)
}

// Next is the turn the agent's gateway should type next: the head of its
// queue, and only when no turn is in flight.
func (b *Book) Next(agent string) (Turn, bool) {
	a, ok := b.agents[agent]
	if !ok || a.inFlight != "" || len(a.queue) == 0 {
		return Turn{}, false
	}
	return b.Turn(a.queue[0])
}

// RoleQueue is the role's unassigned turn ids, oldest first.
func (b *Book) RoleQueue(role string) []string { return slices.Clone(b.roles[role]) }

// Roles lists roles with unassigned turns.
func (b *Book) Roles() []string {
	out := make([]string, 0, len(b.roles))
	for r, q := range b.roles {
		if len(q) > 0 {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// Busy reports whether the agent has a turn queued or in flight.
func (b *Book) Busy(agent string) bool {
	a, ok := b.agents[agent]
	return ok && (a.inFlight != "" || len(a.queue) > 0)
}

// Forget drops a final turn from memory (its state lives on in the turns
// KV), so a long-running fold does not grow without bound.
func (b *Book) Forget(id string) {
	if t, ok := b.turns[id]; ok && t.State.Final() {
		delete(b.turns, id)
	}
}

// Apply folds one event. It returns the turn the event changed, or false
// when the event touched no turn (not a turn event, a duplicate, or out of
// order).
func (b *Book) Apply(ev events.Event) (Turn, bool) {
	id := TurnID(ev)
	switch d := ev.Data.(type) {
	case events.RoleQueued:
		if t, dup := b.turns[id]; dup {
			// The turn back in its role's queue after a release: that it
			// is stored is all there is to note.
			if d.Requeue > t.Requeued {
				t.Requeued = d.Requeue
				return b.touch(t, ev), true
			}
			return Turn{}, false
		}
		t := &Turn{ID: id, Role: ev.Subject, From: d.From, Text: d.Text, Command: d.Command, Normalized: d.Normalized,
			Context: d.Context, SliceRef: d.SliceRef, Deadline: d.Deadline, Job: d.Job, Task: d.Task, Notify: d.Notify, State: StateQueued, QueuedAt: ev.Time}
		b.turns[id] = t
		b.roles[ev.Subject] = append(b.roles[ev.Subject], id)
		return b.touch(t, ev), true

	case events.RoleCancelled:
		// Only a turn still in its role's queue: the cancel's id is the
		// turn's next assignment's, so the log holds one or the other.
		t, ok := b.turns[id]
		if !ok || t.Agent != "" || t.State != StateQueued || t.Role != ev.Subject {
			return Turn{}, false
		}
		b.roles[t.Role] = remove(b.roles[t.Role], id)
		t.State = StateFailed
		t.FailedAt = ev.Time
		t.Reason, t.Message = events.ReasonCancelled, d.Message
		if t.Message == "" {
			t.Message = "cancelled by " + d.By
		}
		return b.touch(t, ev), true

	case events.AgentQueued:
		t, ok := b.turns[id]
		switch {
		case !ok:
			t = &Turn{ID: id, Role: d.AssignedFrom, From: d.From, Text: d.Text, Command: d.Command, Normalized: d.Normalized,
				Context: d.Context, SliceRef: d.SliceRef, Deadline: d.Deadline, Job: d.Job, Task: d.Task, Notify: d.Notify, Nudge: d.Kind == events.TurnKindNudge,
				State: StateQueued, QueuedAt: ev.Time}
			if d.AssignedFrom != "" {
				t.AssignedAt = ev.Time
			}
			b.turns[id] = t
		case t.Agent == "" && t.State == StateQueued:
			// A role turn assigned to this agent.
			t.AssignedAt = ev.Time
			b.roles[t.Role] = remove(b.roles[t.Role], id)
		default:
			return Turn{}, false
		}
		t.Agent = ev.Subject
		t.QueueSeq = ev.Seq
		a := b.agent(ev.Subject)
		a.queue = append(a.queue, id)
		return b.touch(t, ev), true

	case events.AgentReleased:
		// A role turn assigned here and never typed goes back to its
		// role's queue. Typed turns are never released: the gateway's
		// typed and the release are both guarded by the agent's last
		// sequence, and whichever the log holds first decides.
		t, ok := b.turns[id]
		if !ok || t.Agent != ev.Subject || !t.Releasable() || d.Attempt != t.Releases+1 {
			return Turn{}, false
		}
		a := b.agent(ev.Subject)
		if !slices.Contains(a.queue, id) {
			return Turn{}, false
		}
		a.queue = remove(a.queue, id)
		t.ReleasedFrom, t.ReleasedAt, t.Releases = t.Agent, ev.Time, d.Attempt
		t.Agent, t.AssignedAt, t.QueueSeq = "", time.Time{}, 0
		t.Reason, t.Message = d.Reason, d.Message
		b.roles[t.Role] = insertByFirstSeq(b.roles[t.Role], b.turns, t)
		return b.touch(t, ev), true

	case events.AgentTyped:
		t, ok := b.turns[id]
		if ok && d.Enter > 0 && t.Agent == ev.Subject && t.State == StateTyped {
			// The one extra Enter of a turn no submission was seen for.
			t.Enter += d.Enter
			return b.touch(t, ev), true
		}
		if !ok || t.Agent != ev.Subject || t.State != StateQueued {
			return Turn{}, false
		}
		a := b.agent(ev.Subject)
		// One turn in flight per agent, in queue order.
		if a.inFlight != "" || len(a.queue) == 0 || a.queue[0] != id {
			return Turn{}, false
		}
		a.queue = remove(a.queue, id)
		a.inFlight = id
		t.State = StateTyped
		t.TypedAt = ev.Time
		t.Pane, t.Method, t.StateChangeSeq, t.Enter = d.Pane, d.Method, d.StateChangeSeq, d.Enter
		t.Delivery, t.Pieces, t.File, t.Prompt, t.Clear = d.Delivery, d.Pieces, d.File, d.Prompt, d.Clear
		return b.touch(t, ev), true

	case events.AgentDeferred:
		// herdr typed nothing: back to the head of the agent's queue.
		t, ok := b.turns[id]
		if !ok || t.Agent != ev.Subject || t.State != StateTyped {
			return Turn{}, false
		}
		a := b.agent(ev.Subject)
		if a.inFlight != id {
			return Turn{}, false
		}
		a.inFlight = ""
		a.queue = slices.Insert(a.queue, 0, id)
		t.State = StateQueued
		t.TypedAt = time.Time{}
		t.Pane, t.Method, t.StateChangeSeq, t.Enter = "", "", 0, 0
		t.Delivery, t.Pieces, t.File, t.Prompt, t.Clear = "", 0, "", "", false
		t.Deferrals++
		t.Reason, t.Message = d.Reason, d.Message
		return b.touch(t, ev), true

	case events.AgentSubmitted:
		t := b.joinInFlight(ev, d.PromptID)
		if t == nil {
			return Turn{}, false
		}
		if d.Prompt != "" && !SamePrompt(d.Prompt, t.Expected()) {
			if d.PromptID == "" {
				return Turn{}, false
			}
			t.OtherPrompts = append(slices.Clip(t.OtherPrompts), d.PromptID)
			return b.touch(t, ev), true
		}
		if t.State == StateSubmitted && t.PromptID == "" && d.PromptID != "" {
			// Submitted on herdr's evidence first: the hook names the prompt.
			t.PromptID = d.PromptID
			if d.SessionID != "" {
				t.SessionID = d.SessionID
			}
			return b.touch(t, ev), true
		}
		if t.State != StateTyped {
			return Turn{}, false
		}
		t.State = StateSubmitted
		t.SubmittedAt = ev.Time
		t.SubmittedVia = d.Via
		if d.PromptID != "" {
			t.PromptID = d.PromptID
		}
		if d.SessionID != "" {
			t.SessionID = d.SessionID
		}
		return b.touch(t, ev), true

	case events.AgentReplied:
		t := b.joinInFlight(ev, d.PromptID)
		if t == nil && d.PromptID != "" {
			// A Stop for another prompt while this turn is in flight: the
			// agent is idle again and this turn's reply is not coming.
			if s := b.strayFor(ev); s != nil {
				s.StrayReplies++
				return b.touch(s, ev), true
			}
		}
		if t == nil || !t.State.InFlight() {
			return Turn{}, false
		}
		if t.SubmittedAt.IsZero() {
			// The Stop hook proves submission too (its UserPromptSubmit
			// may still sit in a spool).
			t.SubmittedAt = ev.Time
		}
		t.State = StateReplied
		t.RepliedAt = ev.Time
		t.Reply = d.Reply
		if !d.UsagePending || t.Tokens == (events.Tokens{}) {
			// Else a usage event that came first (it was not spooled,
			// the reply was) has set them already.
			t.Model, t.Tokens, t.CostUSD = d.Model, d.Tokens, d.CostUSD
		}
		t.UsagePending = d.UsagePending && t.Tokens == (events.Tokens{})
		if d.PromptID != "" {
			t.PromptID = d.PromptID
		}
		if d.SessionID != "" {
			t.SessionID = d.SessionID
		}
		b.agent(ev.Subject).inFlight = ""
		return b.touch(t, ev), true

	case events.AgentUsage:
		// The usage of a turn in flight: its reply, usage pending, is
		// not applied yet (it sat in a spool the usage did not). The
		// usage of a replied turn is UsageApplied's business: the Book
		// forgets ended turns.
		a := b.agents[ev.Subject]
		if a == nil || d.PromptID == "" {
			return Turn{}, false
		}
		t := b.turns[a.inFlight]
		if t == nil || t.PromptID != d.PromptID {
			return Turn{}, false
		}
		UsageApplied(t, d)
		return b.touch(t, ev), true

	case events.AgentFailed:
		t, ok := b.turns[id]
		if !ok && id == "" {
			// A hook saw the turn end in error (StopFailure) without
			// knowing its id: it is the agent's turn in flight.
			t, ok = b.joinInFlight(ev, ""), true
			ok = t != nil
		}
		if !ok || t.State.Final() {
			return Turn{}, false
		}
		t.State = StateFailed
		t.FailedAt = ev.Time
		t.Reason, t.Message = d.Reason, d.Message
		// t.ID, not id: a failure joined to the turn in flight has no id.
		if t.Agent == "" {
			b.roles[t.Role] = remove(b.roles[t.Role], t.ID)
		} else {
			a := b.agent(t.Agent)
			a.queue = remove(a.queue, t.ID)
			if a.inFlight == t.ID {
				a.inFlight = ""
			}
		}
		return b.touch(t, ev), true
	}
	return Turn{}, false
}

// joinInFlight finds the turn a hook event belongs to: the agent's turn in
// flight, which the event's correlation id (if any) must name.
func (b *Book) joinInFlight(ev events.Event, promptID string) *Turn {
	a, ok := b.agents[ev.Subject]
	if !ok || a.inFlight == "" {
		return nil
	}
	t := b.turns[a.inFlight]
	if t == nil {
		return nil
	}
	if ev.CorrelationID != "" && ev.CorrelationID != t.ID {
		// The event names another turn. A finished one means the hook read
		// a stale turn id and the event belongs to the turn in flight; an
		// open one means it is not this turn's event.
		if other, known := b.turns[ev.CorrelationID]; known && !other.State.Final() {
			return nil
		}
	}
	if promptID != "" && (t.PromptID != "" && promptID != t.PromptID || slices.Contains(t.OtherPrompts, promptID)) {
		return nil
	}
	return t
}

// strayFor is the agent's turn in flight when a replied event did not join
// it: a reply the hook reported for another prompt. An event that names
// another open turn is that turn's business, not a stray.
func (b *Book) strayFor(ev events.Event) *Turn {
	a, ok := b.agents[ev.Subject]
	if !ok || a.inFlight == "" {
		return nil
	}
	t := b.turns[a.inFlight]
	if t == nil || !t.State.InFlight() {
		return nil
	}
	if ev.CorrelationID != "" && ev.CorrelationID != t.ID {
		if other, known := b.turns[ev.CorrelationID]; known && !other.State.Final() {
			return nil
		}
	}
	return t
}

// SamePrompt reports whether a prompt an agent's hook reported is the one
// fleetd typed (Turn.Expected). fleetd types only what Claude Code's
// composer keeps exactly, so they are equal; the comparison tolerates what
// the composer is known to change in a text that reached it another way
// (a person's paste, an older delivery): tabs expanded, trailing
// whitespace trimmed, invisible format characters dropped, Unicode
// composed (NFC), and a long paste wrapped in <pasted_content>.
func SamePrompt(prompt, expected string) bool {
	if prompt == expected {
		return true
	}
	return canonical(unwrapPaste(prompt)) == canonical(expected)
}

// unwrapPaste strips the <pasted_content id="…"> wrapper Claude Code puts
// around a paste it collapsed.
func unwrapPaste(p string) string {
	s := strings.TrimSpace(p)
	open, rest, ok := strings.Cut(s, ">")
	if !ok || !strings.HasPrefix(open, "<pasted_content") {
		return p
	}
	if i := strings.LastIndex(rest, "</pasted_content"); i >= 0 {
		return rest[:i]
	}
	return p
}

// canonical is s in Unicode normal form C, with runs of whitespace as one
// space, no leading or trailing whitespace and no format characters
// (Unicode Cf).
func canonical(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, norm.NFC.String(s))
	return strings.Join(strings.Fields(s), " ")
}

func (b *Book) touch(t *Turn, ev events.Event) Turn {
	if ev.Seq > t.LastSeq {
		t.LastSeq = ev.Seq
	}
	if t.FirstSeq == 0 || ev.Seq > 0 && ev.Seq < t.FirstSeq {
		t.FirstSeq = ev.Seq
	}
	return *t
}

// insertByFirstSeq puts t into a role's queue in the order the turns were
// first queued, so a released turn goes back ahead of younger ones.
func insertByFirstSeq(queue []string, turns map[string]*Turn, t *Turn) []string {
	if slices.Contains(queue, t.ID) {
		return queue
	}
	i := slices.IndexFunc(queue, func(id string) bool {
		o := turns[id]
		return o != nil && o.FirstSeq > t.FirstSeq
	})
	if i < 0 {
		return append(queue, t.ID)
	}
	return slices.Insert(queue, i, t.ID)
}

func remove(ids []string, id string) []string {
	if i := slices.Index(ids, id); i >= 0 {
		return slices.Delete(ids, i, i+1)
	}
	return ids
}

// UsageApplied sets a turn's tokens and cost from its usage event.
func UsageApplied(t *Turn, d events.AgentUsage) {
	t.Tokens, t.CostUSD, t.UsagePending = d.Tokens, d.CostUSD, false
	if d.Model != "" {
		t.Model = d.Model
	}
}
