package herdrbridge_test

import (
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/lifecycle"
)

// herdr refusing the paste before writing anything (pane_send_failed;
// agent.prompt's agent_not_ready for a kind typed with it) sends the turn
// back to the head of its queue, each time as a deferred event; once
// herdr accepts, the turn is typed exactly once and replied.
func TestARefusalThatTypedNothingDefersTheTurn(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", quickAgent)
	f.herdr.FailNext("pane.send_input", "pane_send_failed", "failed to write to pane "+p.ID, 3)
	f.start(nil)
	turn := f.queue("w-1", "after three refusals", time.Time{})

	f.waitOutput(p.ID, "ANSWER: after three refusals")
	f.waitTurn(turn, lifecycle.StateSubmitted)
	f.add("w-1", events.AgentReplied{Reply: "ok"}, turn)
	got := f.waitTurn(turn, lifecycle.StateReplied)
	if got.Deferrals != 3 {
		t.Errorf("deferrals %d, want 3", got.Deferrals)
	}
	if n := f.count("w-1", ofType(events.TypeAgentDeferred, turn)); n != 3 {
		t.Errorf("%d deferred events, want 3", n)
	}
	if n := f.typedCount(p.ID, "after three refusals"); n != 1 {
		t.Errorf("the text reached the pane %d times, want once", n)
	}
}

// A turn herdr keeps refusing fails after MaxDeferrals with the reason,
// and nothing reaches the pane.
func TestATurnHerdrKeepsRefusingFailsAsNotReady(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", quickAgent)
	f.herdr.FailNext("pane.send_input", "pane_send_failed", "failed to write to the pane", 100)
	f.start(func(c *herdrbridge.BridgeConfig) { c.MaxDeferrals = 3 })
	turn := f.queue("w-1", "never typed", time.Time{})
	got := f.waitTurn(turn, lifecycle.StateFailed)
	if got.Reason != events.ReasonNotReady {
		t.Errorf("failed %q (%s), want %s", got.Reason, got.Message, events.ReasonNotReady)
	}
	if n := f.typedCount(p.ID, "never typed"); n != 0 {
		t.Errorf("the text reached the pane %d times", n)
	}
}

// A submitted turn whose agent went idle with a Stop hook for another
// prompt is settled as unmatched_reply, and the agent gets its next turn:
// nothing wedges it.
func TestAnUnmatchedReplySettlesTheTurnAndTheNextOneGoes(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", quickAgent)
	f.start(func(c *herdrbridge.BridgeConfig) { c.ReplyGrace = 200 * time.Millisecond })
	first := f.queue("w-1", "first", time.Time{})
	second := f.queue("w-1", "second", time.Time{})

	f.waitOutput(p.ID, "ANSWER: first")
	f.add("w-1", events.AgentSubmitted{Via: "hook", PromptID: "p1", Prompt: "first"}, "")
	f.waitTurn(first, lifecycle.StateSubmitted)
	// The agent's Stop hook answers another prompt (one typed by hand).
	f.add("w-1", events.AgentReplied{Reply: "not yours", PromptID: "p-other"}, "")
	got := f.waitTurn(first, lifecycle.StateFailed)
	if got.Reason != events.ReasonUnmatchedReply || got.Reply != "" {
		t.Errorf("first: %s %q reply %q, want failed unmatched_reply", got.State, got.Reason, got.Reply)
	}
	f.waitOutput(p.ID, "ANSWER: second")
	f.add("w-1", events.AgentReplied{Reply: "two"}, second)
	f.waitTurn(second, lifecycle.StateReplied)
}

// A submitted turn whose agent has been idle for IdleGrace without any
// Stop hook is settled too.
func TestASubmittedTurnWithoutAStopHookIsSettled(t *testing.T) {
	f := newFleet(t)
	f.readyAgent("w-1", quickAgent)
	f.start(func(c *herdrbridge.BridgeConfig) { c.IdleGrace = 500 * time.Millisecond })
	turn := f.queue("w-1", "no stop hook comes", time.Time{})
	got := f.waitTurn(turn, lifecycle.StateFailed)
	if got.Reason != events.ReasonUnmatchedReply || got.SubmittedVia != "herdr" {
		t.Errorf("turn %+v, want submitted via herdr, then failed unmatched_reply", got)
	}
}

// A turn costs herdr a few requests, not a poll loop: readiness and
// submission come from herdr's events and one look at the screen.
func TestATurnCostsHerdrAFewRequests(t *testing.T) {
	f := newFleet(t)
	f.readyAgent("w-1", quickAgent)
	f.start(nil)
	// The first turn pays for the connection (snapshot, subscriptions).
	warm := f.queue("w-1", "warm up", time.Time{})
	f.waitTurn(warm, lifecycle.StateSubmitted)
	f.add("w-1", events.AgentReplied{Reply: "ok"}, warm)
	f.waitTurn(warm, lifecycle.StateReplied)

	total := func() int {
		n := 0
		for _, c := range f.herdr.Calls() {
			n += c
		}
		return n
	}
	before := total()
	const turns = 10
	for i := range turns {
		id := f.queue("w-1", "turn "+string(rune('a'+i)), time.Time{})
		f.waitTurn(id, lifecycle.StateSubmitted)
		f.add("w-1", events.AgentReplied{Reply: "ok"}, id)
		f.waitTurn(id, lifecycle.StateReplied)
	}
	per := float64(total()-before) / turns
	t.Logf("%.1f herdr requests per turn: %v", per, f.herdr.Calls())
	if per > 10 {
		t.Errorf("%.1f herdr requests per turn, want at most 10", per)
	}
}

// A hook's "working" that arrives after herdr showed the agent idle (its
// UserPromptSubmit spooled while the gateway was down, replayed once it
// was back) does not hold a turn whose Stop hook was lost: herdr shows
// the agent idle and says nothing more, so the grace runs from herdr's
// present view. The turn stayed submitted, the agent's queue behind it,
// when only a change of herdr's status could start the grace.
func TestASubmittedTurnIsSettledWhenHerdrShowsTheAgentIdleAfterAStaleHookStatus(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", quickAgent)
	f.start(func(c *herdrbridge.BridgeConfig) { c.IdleGrace = 3 * time.Second })
	turn := f.queue("w-1", "its stop hook is lost", time.Time{})
	f.waitOutput(p.ID, "ANSWER: its stop hook is lost")
	f.waitTurn(turn, lifecycle.StateSubmitted)
	typed := f.waitEvent("fleet.agent.w-1.typed", ofType(events.TypeAgentTyped, turn))
	f.waitEvent("fleet.agent.w-1.status", func(ev events.Event) bool {
		d, ok := ev.Data.(events.AgentStatusChanged)
		return ok && ev.Seq > typed.Seq && d.Source == "herdr" && d.Status.Ready()
	})
	next := f.queue("w-1", "next", time.Time{})
	f.add("w-1", events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}, "")
	got := f.waitTurn(turn, lifecycle.StateFailed)
	if got.Reason != events.ReasonUnmatchedReply {
		t.Errorf("turn %+v, want failed unmatched_reply", got)
	}
	f.waitOutput(p.ID, "ANSWER: next")
	f.waitTurn(next, lifecycle.StateSubmitted, lifecycle.StateFailed)
}
