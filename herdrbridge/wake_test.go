package herdrbridge

import (
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
)

// An event about one agent wakes that agent's waiters (its delivery
// worker, resolvers, waits) and nobody else's: with a hundred agents on a
// host, every event of any agent waking every worker kept the run queue
// full during a fan-out. A change every worker must see (herdr's link,
// the catch-up) wakes them all, and a change of the agents the bridge owns
// also wakes the herdr watcher, which follows them with its subscriptions.
func TestAnEventWakesOnlyItsAgentsWaiters(t *testing.T) {
	b, err := NewBridge(BridgeConfig{Host: "h1", SocketPath: "/nonexistent/herdr.sock", Log: events.New(nil, events.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	seq := uint64(0)
	apply := func(agent string, data events.Data) {
		seq++
		b.apply(events.Event{ID: events.NewULIDSource(func() time.Time { return now })(), Subject: agent, Seq: seq, Time: now, Data: data})
	}
	apply("w1", events.AgentRegistered{Host: "h1", Pane: "p1", Role: "w"})
	apply("w2", events.AgentRegistered{Host: "h1", Pane: "p2", Role: "w"})

	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	chans := func() (w1, w2, owners <-chan struct{}) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.agents["w1"].changed, b.agents["w2"].changed, b.changed
	}

	w1, w2, owners := chans()
	apply("w1", events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"})
	if !closed(w1) {
		t.Error("w1's event did not wake w1's waiters")
	}
	if closed(w2) {
		t.Error("w1's event woke w2's waiters")
	}
	if closed(owners) {
		t.Error("a status event woke the herdr watcher: the owned agents did not change")
	}

	w1, w2, owners = chans()
	apply("w3", events.AgentRegistered{Host: "h1", Pane: "p3", Role: "w"})
	if closed(w1) || closed(w2) {
		t.Error("w3's registration woke the other agents' waiters")
	}
	if !closed(owners) {
		t.Error("a registration on this host did not wake the herdr watcher")
	}

	w1, w2, owners = chans()
	b.setCaughtUp()
	if !closed(w1) || !closed(w2) || !closed(owners) {
		t.Error("the catch-up did not wake everyone")
	}
}
