package herdrbridge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/lifecycle"
)

// controlRoles: w-always would come back from any end on its own;
// w-never from none.
func controlRoles(t *testing.T) string {
	t.Helper()
	return `{"roles":{
		"w-always":{"command":["sh","-c","echo ARGS \"$*\" END; sleep 60","sh","{resume}"],"restart":"always","restart_backoff":"50ms"},
		"w-never":{"command":["sh","-c","echo ARGS \"$*\" END; sleep 60","sh","{resume}"]}}}`
}

// A stopped agent is gone for good: its pane closed, its exit names who
// stopped it, the turns sent to it by name fail, and its role's restart
// policy — which restarts it from any other end — does not bring it back.
func TestAStoppedAgentStaysStoppedAndItsExitSaysWho(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) { c.Roles = mustRoles(t, controlRoles(t)) })
	ctx := context.Background()
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-always", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "ARGS  END")
	f.add("w-1", events.AgentSession{SessionID: sid1, State: "started", Source: "startup"}, "")
	byName := f.queue("w-1", "for w-1 only", time.Time{})
	if err := b.Stop(ctx, "w-1", "alice"); err != nil {
		t.Fatal(err)
	}
	var exits []string
	for _, ev := range f.history("w-1") {
		if d, ok := ev.Data.(events.AgentExited); ok {
			exits = append(exits, d.Reason)
		}
	}
	if fmt.Sprint(exits) != "[stopped by alice]" {
		t.Errorf("exits %q, want one, stopped by alice", exits)
	}
	if got := f.waitTurn(byName, lifecycle.StateFailed); got.Reason != events.ReasonPaneExited || !contains(got.Message, "stopped by alice") {
		t.Errorf("the turn by name: %s %s", got.Reason, got.Message)
	}
	if _, err := f.client.Pane(ctx, reg.Pane); err == nil {
		t.Errorf("pane %s still open", reg.Pane)
	}
	// Another agent spawned and stopped after it: by then a restart of
	// the first would have been decided.
	reg2, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-always", Name: "w-2"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg2.Pane, "ARGS  END")
	if rs := f.restarts("w-1"); len(rs) != 0 {
		t.Errorf("restarts of the stopped agent %+v, want none", rs)
	}
	if err := b.Stop(ctx, "w-1", "alice"); !errors.Is(err, herdrbridge.ErrNotHere) {
		t.Errorf("stop again: %v, want ErrNotHere", err)
	}
}

// A person's restart brings an agent back in a new pane under the same
// id, resuming its session, whatever its role's policy (w-never restarts
// from no end on its own); it is recorded restarting and restarted with
// who asked; the old pane is closed without the agent being recorded
// exited, and a turn sent to it by name waits for the new pane.
func TestARestartStartsTheAgentAfreshAndKeepsItsTurnsByName(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) {
		c.Roles = mustRoles(t, controlRoles(t))
		c.ExitGrace = 50 * time.Millisecond // would fail the waiting turn, were it not restarted
	})
	ctx := context.Background()
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-never", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "ARGS  END")
	f.add("w-1", events.AgentSession{SessionID: sid1, State: "started", Source: "startup"}, "")
	byName := f.queue("w-1", "for w-1 only", time.Time{})
	got, err := b.Restart(ctx, "w-1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Pane == reg.Pane || got.Agent != "w-1" {
		t.Fatalf("restarted as %+v, want w-1 in a new pane", got)
	}
	f.waitOutput(got.Pane, "ARGS --resume "+sid1+" END")
	var steps []string
	for _, r := range f.restarts("w-1") {
		steps = append(steps, r.State+": "+r.Cause)
	}
	if want := "[restarting: restarted by alice restarted: restarted by alice]"; fmt.Sprint(steps) != want {
		t.Errorf("restart steps %q, want %s", steps, want)
	}
	if _, err := f.client.Pane(ctx, reg.Pane); err == nil {
		t.Errorf("old pane %s still open", reg.Pane)
	}
	if tu := f.turn(byName); tu.State != lifecycle.StateQueued || tu.Agent != "w-1" {
		t.Errorf("turn by name = %s on %q, want still queued on w-1", tu.State, tu.Agent)
	}
	// The old pane's end was recorded before the new pane was made
	// (Restart retires what a closed pane retires, then spawns): it
	// retired nothing.
	for _, ev := range f.history("w-1") {
		if _, ok := ev.Data.(events.AgentExited); ok {
			t.Errorf("the restarted agent was recorded exited: %+v", ev)
		}
	}
	if _, err := b.Restart(ctx, "ghost", "alice"); !errors.Is(err, herdrbridge.ErrNotHere) {
		t.Errorf("restart of an unknown agent: %v, want ErrNotHere", err)
	}
}
