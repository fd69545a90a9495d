package lifecycle_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

func TestAFailureWithoutTurnIDFreesTheAgent(t *testing.T) {
	s := newScript(t)
	s.apply("T1", "w1", "T1", events.AgentQueued{Text: "one"})
	s.apply("T2", "w1", "T2", events.AgentQueued{Text: "two"})
	s.apply("E1", "w1", "T1", events.AgentTyped{Pane: "p"})
	if !s.apply("E2", "w1", "", events.AgentFailed{Reason: "agent_error"}) {
		t.Fatal("StopFailure without a turn id did not join the turn in flight")
	}
	if _, ok := s.book.InFlight("w1"); ok {
		t.Fatal("the failed turn is still in flight")
	}
	if !s.apply("E3", "w1", "T2", events.AgentTyped{Pane: "p"}) {
		t.Fatal("the next turn cannot be typed after a failure without a turn id")
	}
}

// A book restored from another's open turns folds the rest of a log
// exactly as the original does.
func TestRestoredBookFoldsLikeTheOriginal(t *testing.T) {
	for seed := range uint64(20) {
		evs := randomTurnLog(seed, 600)
		cut := len(evs) / 2
		orig := lifecycle.NewBook()
		for _, ev := range evs[:cut] {
			if tu, ok := orig.Apply(ev); ok && tu.State.Final() {
				orig.Forget(tu.ID)
			}
		}
		restored := lifecycle.NewBook()
		orig.Turns(func(tu lifecycle.Turn) bool { restored.Restore(tu); return true })
		for i, ev := range evs[cut:] {
			a, aok := orig.Apply(ev)
			b, bok := restored.Apply(ev)
			if aok != bok || !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d event %d (%T): original %v %+v, restored %v %+v", seed, cut+i, ev.Data, aok, a, bok, b)
			}
			if aok && a.State.Final() {
				orig.Forget(a.ID)
				restored.Forget(b.ID)
			}
		}
		for _, agent := range []string{"a0", "a1", "a2"} {
			if !reflect.DeepEqual(orig.Queue(agent), restored.Queue(agent)) {
				t.Fatalf("seed %d: queues differ for %s", seed, agent)
			}
		}
	}
}

func randomTurnLog(seed uint64, n int) []events.Event {
	rng := rand.New(rand.NewPCG(seed, 1))
	var evs []events.Event
	var turns []string
	for i := range n {
		agent := fmt.Sprintf("a%d", rng.IntN(3))
		ev := events.Event{ID: fmt.Sprintf("E%04d", i), Subject: agent, Seq: uint64(i + 1)}
		pick := func() string {
			if len(turns) == 0 {
				return ""
			}
			return turns[rng.IntN(len(turns))]
		}
		switch rng.IntN(8) {
		case 0:
			ev.CorrelationID = ev.ID
			turns = append(turns, ev.ID)
			ev.Data = events.AgentQueued{Text: "t"}
		case 1:
			ev.Subject = "r"
			ev.CorrelationID = ev.ID
			turns = append(turns, ev.ID)
			ev.Data = events.RoleQueued{Text: "r"}
		case 2:
			ev.CorrelationID = pick()
			ev.Data = events.AgentQueued{Text: "t", AssignedFrom: "r"}
		case 3:
			ev.CorrelationID = pick()
			ev.Data = events.AgentTyped{Pane: "p"}
		case 4:
			ev.Data = events.AgentSubmitted{Via: "hook", PromptID: fmt.Sprint(rng.IntN(3))}
		case 5:
			ev.Data = events.AgentReplied{Reply: "r"}
		case 6:
			ev.CorrelationID = pick()
			if rng.IntN(2) == 0 {
				ev.CorrelationID = ""
			}
			ev.Data = events.AgentFailed{Reason: "x"}
		default:
			ev.CorrelationID = pick()
			ev.Data = events.AgentSubmitted{Via: "herdr"}
		}
		evs = append(evs, ev)
	}
	return evs
}
