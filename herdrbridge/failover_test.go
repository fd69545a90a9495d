package herdrbridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/lifecycle"
)

// assignRole appends a role turn and its assignment to agent, as the
// router does, and returns the turn id.
func (f *fleet) assignRole(agent, role, text string) string {
	f.t.Helper()
	id := f.newID()
	ctx := context.Background()
	if _, err := f.log.Append(ctx, events.Event{ID: id, Subject: role, CorrelationID: id, Data: events.RoleQueued{From: "lead", Text: text}}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.log.Append(ctx, events.Event{Subject: agent, CorrelationID: id, CausationID: id,
		Data: events.AgentQueued{From: "lead", Text: text, AssignedFrom: role}}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// requeued waits for the RoleQueued that puts turn back in role's queue.
func (f *fleet) requeued(role, turn string) events.RoleQueued {
	f.t.Helper()
	ev := f.waitEvent("fleet.role."+role+".queued", func(ev events.Event) bool {
		return ev.CorrelationID == turn && ev.Data.(events.RoleQueued).Requeue > 0
	})
	return ev.Data.(events.RoleQueued)
}

func TestAPaneExitGivesItsRoleTurnsBackAndFailsTheRest(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(foreverBusy)})
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusWorking)
	f.register("w-1", p.ID)
	f.start(nil)
	role := f.assignRole("w-1", "w-claude", "any worker")
	direct := f.queue("w-1", "only w-1", time.Time{})
	f.waitEvent("fleet.agent.w-1.status", anyEvent) // the bridge follows the agent

	if err := f.client.ClosePane(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.waitTurn(direct, lifecycle.StateFailed); got.Reason != events.ReasonPaneExited {
		t.Errorf("direct turn failed %q, want pane_exited", got.Reason)
	}
	rel := f.waitEvent("fleet.agent.w-1.released", func(ev events.Event) bool { return ev.CorrelationID == role })
	if d := rel.Data.(events.AgentReleased); d.Attempt != 1 || d.Role != "w-claude" || d.Reason != events.ReasonPaneExited {
		t.Errorf("release %+v", d)
	}
	if rq := f.requeued("w-claude", role); rq.Text != "any worker" || rq.From != "lead" || rq.Requeue != 1 {
		t.Errorf("requeue %+v", rq)
	}
	if got := f.turn(role); got.State != lifecycle.StateQueued || got.Agent != "" || got.Releases != 1 {
		t.Errorf("role turn = %+v, want queued for its role again", got)
	}
	f.waitEvent("fleet.agent.w-1.exited", anyEvent)
	if n := f.count("w-1", ofType(events.TypeAgentTyped, role)); n != 0 {
		t.Errorf("the role turn was typed %d times", n)
	}
}

func TestASessionThatEndedGivesItsRoleTurnsBackAtOnceAndKeepsTurnsByName(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(foreverBusy)})
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusWorking)
	f.register("w-1", p.ID)
	f.add("w-1", events.AgentSession{SessionID: "s1", State: "started", Source: "startup"}, "")
	f.start(func(c *herdrbridge.BridgeConfig) { c.ExitGrace = time.Hour })
	role := f.assignRole("w-1", "w-claude", "any worker")
	direct := f.queue("w-1", "only w-1", time.Time{})
	f.add("w-1", events.AgentSession{SessionID: "s1", State: "ended", Reason: "other"}, "")

	rel := f.waitEvent("fleet.agent.w-1.released", func(ev events.Event) bool { return ev.CorrelationID == role })
	if d := rel.Data.(events.AgentReleased); d.Reason != events.ReasonAgentDied {
		t.Errorf("release %+v, want agent_died", d)
	}
	f.requeued("w-claude", role)
	// The turn sent by name waits for the agent to come back (ExitGrace).
	if got := f.turn(direct); got.State != lifecycle.StateQueued || got.Agent != "w-1" {
		t.Errorf("direct turn = %+v, want still queued on w-1", got)
	}
}
