package orchestrator_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
)

// A main pair: two mains at tier 1, each its own agent with its own inbox.
// Main A, asked to consult its peer, finds main B in the roster and sends
// it a turn through the same path the orchestrator uses; B's reply comes
// back to A as that turn's reply, and A rolls it up.
func TestMainPairMessagesEachOtherThroughTheTurnPath(t *testing.T) {
	var f *fleet
	f = newFleet(t, func(ctx context.Context, agent, role string, tr lifecycle.Turn) string {
		line := firstLine(tr.Text)
		q, ok := strings.CutPrefix(line, "ask your peer: ")
		if !ok {
			return "pong from " + agent + ": " + line
		}
		peers := orchestrator.Peers(f.views.Roster(), agent)
		if len(peers) != 1 {
			return "no single peer"
		}
		s := orchestrator.NewLogSender(f.log, f.views)
		id, err := s.Send(ctx, orchestrator.Message{To: peers[0].Agent, From: agent, Text: q, Job: tr.Job})
		if err != nil {
			return err.Error()
		}
		reply, err := s.Wait(ctx, id)
		if err != nil {
			return err.Error()
		}
		return "peer says: " + reply.Reply
	})
	plan := orchestrator.Plan{Goal: "pair", Tasks: []orchestrator.Task{
		{ID: "wake-b", To: "session:main-b", Instructions: "stand by"},
		{ID: "ask", To: "session:main-a", Instructions: "ask your peer: what is 6x7", Needs: []string{"wake-b"}},
	}}
	o := f.orchestrator(orchestrator.Config{Sessions: f.sessions(orchestrator.SessionConfig{Tier: 1, Parent: "orchestrator"})})
	res, err := o.Run(f.ctx, plan, "pair1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "peer says: pong from main-b-1: what is 6x7"; res.Rollups["ask"] != want {
		t.Errorf("A's rollup = %q, want %q", res.Rollups["ask"], want)
	}
	// B's inbox holds A's message as a turn from A; A's inbox only the
	// orchestrator's task.
	var fromA []string
	for _, ev := range f.all("fleet.agent.main-b-1.queued") {
		if q := ev.Data.(events.AgentQueued); q.From == "main-a-1" {
			fromA = append(fromA, q.Text)
		}
	}
	if !slices.Equal(fromA, []string{"what is 6x7"}) {
		t.Errorf("turns from main-a-1 on main-b-1 = %q", fromA)
	}
	for _, ev := range f.all("fleet.agent.main-a-1.queued") {
		if q := ev.Data.(events.AgentQueued); q.From != "orchestrator" {
			t.Errorf("main-a-1 got a turn from %q", q.From)
		}
	}
	if peers := orchestrator.Peers(f.views.Roster(), "main-b-1"); len(peers) != 1 || peers[0].Agent != "main-a-1" {
		t.Errorf("main-b-1's peers = %+v", peers)
	}
}

func TestLogSenderQueuesRoleTurnsWithTheTurnIDAsEventID(t *testing.T) {
	f := newFleet(t, worker)
	s := orchestrator.NewLogSender(f.log, f.views)
	id, err := s.Send(f.ctx, orchestrator.Message{To: "role:w-local", Text: "any worker", From: "main-a-1", Context: []string{"tag:api"}, Job: "J", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	got := f.all("fleet.role.w-local.queued")
	if len(got) != 1 || got[0].ID != id || got[0].CorrelationID != id {
		t.Fatalf("role queued = %+v, want id = correlation id = %s", got, id)
	}
	if d := got[0].Data.(events.RoleQueued); d.From != "main-a-1" || d.Job != "J" || !slices.Equal(d.Context, []string{"tag:api"}) {
		t.Errorf("role queued data = %+v", d)
	}
	if _, err := s.Send(f.ctx, orchestrator.Message{To: "session:main-a", Text: "x"}); err == nil {
		t.Error("a sender accepted an unresolved session target")
	}
}
