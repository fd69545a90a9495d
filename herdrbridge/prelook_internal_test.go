package herdrbridge

import (
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
)

// A look at the screen taken ahead of a turn (Expect) stands for the turn
// only when the turn's own queued event is the one change of the agent
// since the look began, and only while it is fresh; it is used once.
func TestALookTakenAheadStandsOnlyForTheTurnThatFollowsIt(t *testing.T) {
	now := time.Date(2026, 12, 4, 7, 0, 0, 0, time.UTC)
	b, err := NewBridge(BridgeConfig{Host: "h1", SocketPath: "/nonexistent/herdr.sock", Log: events.New(nil, events.Options{}),
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ids := events.NewULIDSource(func() time.Time { return now })
	seq := uint64(0)
	apply := func(data events.Data) string {
		seq++
		id := ids()
		b.apply(events.Event{ID: id, Subject: "w1", CorrelationID: id, Seq: seq, Time: now, Data: data})
		return id
	}
	apply(events.AgentRegistered{Host: "h1", Pane: "p1", Role: "w"})
	// look takes a look now, queues a turn and runs between (the test's
	// change), then asks whether the look stands for the turn.
	look := func(between func()) bool {
		b.mu.Lock()
		a := b.agents["w1"]
		a.look = preLook{wakes: a.wakes, at: now}
		b.mu.Unlock()
		turn := apply(events.AgentQueued{From: "lead", Text: "hi"})
		if between != nil {
			between()
		}
		return b.lookedFor("w1", lifecycle.Turn{ID: turn})
	}
	for _, c := range []struct {
		name    string
		between func()
		want    bool
	}{
		{"nothing else changed", nil, true},
		{"another event of the agent", func() { apply(events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}) }, false},
		{"a herdr observation of the pane", func() {
			b.mu.Lock()
			b.noteLocked(b.agents["w1"], herdrapi.StatusIdle, 7, "claude")
			b.mu.Unlock()
		}, false},
		{"the link to herdr changed", func() {
			b.mu.Lock()
			b.notifyLocked()
			b.mu.Unlock()
		}, false},
		{"too old", func() { now = now.Add(preLookFresh + time.Millisecond) }, false},
	} {
		if got := look(c.between); got != c.want {
			t.Errorf("%s: the look stands %v, want %v", c.name, got, c.want)
		}
	}
	if look(nil) != true {
		t.Fatal("a fresh look with nothing between does not stand")
	}
	if b.lookedFor("w1", lifecycle.Turn{ID: "next"}) {
		t.Error("a look stood twice")
	}
}
