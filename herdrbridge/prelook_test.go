package herdrbridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
)

// lookAhead has the bridge look at agent's screen ahead of a turn
// (Expect) and waits until herdr served the read: again until it does,
// since a bridge that does not see the agent idle yet (herdr's status
// after the last turn) takes no look.
func (f *fleet) lookAhead(r *running, agent string) {
	f.t.Helper()
	reads := f.herdr.Calls()["pane.read"]
	checkfor.Eventually(f.t, 20*time.Second, 20*time.Millisecond, func() error {
		if n := f.herdr.Calls()["pane.read"]; n <= reads {
			r.Expect(agent)
			return fmt.Errorf("%d screen reads, none since Expect", n)
		}
		return nil
	})
}

// Turns announced by Expect before they are queued, as the shim does,
// are each typed once, in order, and replied.
func TestExpectedTurnsAreTypedOnceAndReplied(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", quickAgent)
	r := f.start(nil)
	for i := range 3 {
		text := fmt.Sprintf("expected turn %d", i+1)
		if i > 0 {
			f.lookAhead(r, "w-1")
		}
		turn := f.queue("w-1", text, time.Time{})
		f.waitOutput(p.ID, "ANSWER: "+text)
		f.waitTurn(turn, lifecycle.StateSubmitted)
		f.add("w-1", events.AgentReplied{Reply: "ok"}, turn)
		f.waitTurn(turn, lifecycle.StateReplied)
		if n := f.typedCount(p.ID, text); n != 1 {
			t.Errorf("%q reached the pane %d times, want once", text, n)
		}
	}
}

// A look taken ahead of a turn does not stand once the agent changed
// after it: a person's draft left in the prompt box after the look, with
// an event of the agent between, is seen by the look the turn then takes,
// and the turn is not typed on top of the draft.
func TestALookTakenAheadIsTakenAgainAfterAChange(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", quickAgent)
	r := f.start(nil)
	warm := f.queue("w-1", "warm up", time.Time{})
	f.waitTurn(warm, lifecycle.StateSubmitted)
	f.add("w-1", events.AgentReplied{Reply: "ok"}, warm)
	f.waitTurn(warm, lifecycle.StateReplied)
	f.waitOutput(p.ID, "ANSWER: warm up")

	f.lookAhead(r, "w-1")
	if err := f.client.SendInput(context.Background(), p.ID, "a person's draft"); err != nil {
		t.Fatal(err)
	}
	// On screen before the change: a look of the bridge's own that began
	// between the keystrokes and their echo is undone by the change too.
	f.waitOutput(p.ID, "a person's draft")
	f.add("w-1", events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}, "")
	turn := f.queue("w-1", "the turn", time.Time{})
	f.waitEvent("fleet.agent.w-1.attention", func(ev events.Event) bool {
		d, ok := ev.Data.(events.AgentAttention)
		return ok && d.Reason == "composer_not_empty"
	})
	if got := f.turn(turn); got.State != lifecycle.StateQueued {
		t.Errorf("turn %s, want still queued behind the draft", got.State)
	}
	if n := f.typedCount(p.ID, "the turn"); n != 0 {
		t.Errorf("the turn reached the pane %d times, want not at all", n)
	}
}
