package projections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

func TestSessionsFollowNamesStatesAndActivity(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{IdleTTL: time.Hour}))
	e.append(t, reg("m1", "h1", "")) // no name: the session is named after the agent
	e.append(t, events.Event{Subject: "m1", Time: at(2), Data: events.AgentSession{SessionID: "0c5a0000-0000-4000-8000-00000000000a", State: "started", TranscriptPath: "/t/a.jsonl", Model: "opus"}})
	// A session event that names the session moves the agent to it.
	e.append(t, events.Event{Subject: "m1", Time: at(3), Data: events.AgentSession{SessionID: "0c5b0000-0000-4000-8000-00000000000b", State: "started", Name: "plan job"}})
	e.append(t, events.Event{Subject: "m1", Time: at(9), Data: events.AgentSession{SessionID: "0c5b0000-0000-4000-8000-00000000000b", State: "ended"}})
	// A started event replayed late (older time) does not reopen it.
	ack := e.append(t, events.Event{Subject: "m1", Time: at(4), Data: events.AgentSession{SessionID: "0c5b0000-0000-4000-8000-00000000000b", State: "started", Name: "plan job"}})
	waitSeq(t, p, ack.Seq)

	got := map[string]projections.Session{}
	for _, s := range p.Sessions() {
		got[s.Name] = s
	}
	m1, plan := got["m1"], got["plan job"]
	if m1.SessionID != "0c5a0000-0000-4000-8000-00000000000a" || m1.State != projections.SessionClosed || m1.Resume != "0c5a0000-0000-4000-8000-00000000000a" || m1.TranscriptPath != "/t/a.jsonl" || m1.Model != "opus" || m1.Tier != 2 {
		t.Errorf("m1 session %+v", m1)
	}
	if plan.SessionID != "0c5b0000-0000-4000-8000-00000000000b" || plan.State != projections.SessionEnded || plan.Agent != "m1" ||
		!plan.LastActive.Equal(at(9)) || !plan.IdleDeadline.Equal(at(9).Add(time.Hour)) || !plan.StartedAt.Equal(at(3)) {
		t.Errorf("plan session %+v", plan)
	}
	if a, _ := p.Agent("m1"); a.Session != "plan job" || a.SessionID != "0c5b0000-0000-4000-8000-00000000000b" {
		t.Errorf("agent session %q %q", a.Session, a.SessionID)
	}
	// A name that cannot be a KV key is stored under its encoded key.
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		s, err := kvGet[projections.Session](e.js, projections.BucketSessions, "plan job")
		if err != nil || s.State != projections.SessionEnded {
			return fmt.Errorf("kv %+v %v", s, err)
		}
		return nil
	})
}

func TestSubscribeDeliversChanges(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{}))
	changes, cancel := p.Subscribe()
	turn := events.NewULIDSource(time.Now)()
	e.append(t, reg("w1", "h1", ""))
	ack := e.append(t, queued("w1", turn, "x"))
	want := map[projections.Change]bool{
		{Kind: projections.KindAgent, Key: "w1", Seq: ack.Seq}:       false,
		{Kind: projections.KindTurn, Key: turn, Seq: ack.Seq}:        false,
		{Kind: projections.KindSession, Key: "w1", Seq: ack.Seq - 1}: false,
	}
	timeout := time.After(10 * time.Second)
	for n := 0; n < len(want); {
		select {
		case c := <-changes:
			if seen, ok := want[c]; ok && !seen {
				want[c] = true
				n++
			}
		case <-timeout:
			t.Fatalf("changes seen: %v", want)
		}
	}
	cancel()
	cancel() // idempotent
	if _, open := <-changes; open {
		// Drain what was buffered; the channel must end closed.
		for range changes {
		}
	}
	// WaitTurn still works on the same projector after the feed ends.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if _, err := p.WaitTurn(ctx, turn, func(t lifecycle.Turn) bool { return t.State == lifecycle.StateQueued }); err != nil {
		t.Fatal(err)
	}
}
