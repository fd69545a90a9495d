package herdrbridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

// restartRoles are roles whose agents die on their own, restarted with a
// short backoff.
func restartRoles(t *testing.T) roles.Config {
	t.Helper()
	return mustRoles(t, `{"roles":{
		"w-crash":{"command":["sh","-c","exit 3"],"restart":"on-failure","restart_max":3,"restart_backoff":"50ms"},
		"w-brief":{"command":["sh","-c","echo ARGS \"$*\" END; sleep 2","sh","{resume}"],"restart":"on-failure","restart_max":1,"restart_backoff":"50ms"},
		"w-once":{"command":["sh","-c","exit 3"]}}}`)
}

// restarts lists the agent's AgentRestart events.
func (f *fleet) restarts(agent string) []events.AgentRestart {
	var out []events.AgentRestart
	for _, ev := range f.history(agent) {
		if d, ok := ev.Data.(events.AgentRestart); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestARestartStormStopsAtTheRolesLimitWithNeedsAttention(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) { c.Roles = restartRoles(t) })
	if _, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-crash", Name: "w-1"}); err != nil {
		t.Fatal(err)
	}
	att := f.waitEvent("fleet.agent.w-1.attention", func(ev events.Event) bool {
		return ev.Data.(events.AgentAttention).Reason == herdrbridge.AttentionRestartLimit
	})
	var got []string
	for _, r := range f.restarts("w-1") {
		got = append(got, fmt.Sprintf("%s#%d/%v", r.State, r.Attempt, r.Delay))
	}
	// Three restarts, each after twice the wait of the last, then no more.
	want := []string{"restarting#1/50ms", "restarted#1/0s", "restarting#2/100ms", "restarted#2/0s", "restarting#3/200ms", "restarted#3/0s", "gave_up#3/0s"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restart steps %v\nwant              %v", got, want)
	}
	if d := att.Data.(events.AgentAttention).Detail; !contains(d, "3 restarts within 10m0s") {
		t.Errorf("attention detail %q", d)
	}
	regs := 0
	for _, ev := range f.history("w-1") {
		if _, ok := ev.Data.(events.AgentRegistered); ok {
			regs++
		}
	}
	if regs != 4 {
		t.Errorf("%d registrations of w-1, want 4 (the spawn and three restarts)", regs)
	}
}

func TestAnAgentWithoutARestartPolicyStaysDead(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) { c.Roles = restartRoles(t) })
	if _, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-once", Name: "w-1"}); err != nil {
		t.Fatal(err)
	}
	ended := f.waitEvent("fleet.agent.w-1.session", anyEvent).Data.(events.AgentSession)
	if ended.State != "ended" || ended.Reason != herdrbridge.SessionEndDied {
		t.Errorf("session event %+v, want ended: died", ended)
	}
	// Another agent spawned afterwards dies the same way and is seen: by
	// then the first one's restart would have been decided.
	if _, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-once", Name: "w-2"}); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("fleet.agent.w-2.session", anyEvent)
	if rs := f.restarts("w-1"); len(rs) != 0 {
		t.Errorf("restarts %+v, want none", rs)
	}
}

func TestADeadAgentComesBackInANewPaneResumingItsSessionWithItsTurnsByName(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) {
		c.Roles = restartRoles(t)
		c.ExitGrace = 50 * time.Millisecond // would fail the waiting turn, were it not restarted
	})
	reg, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-brief", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "ARGS  END")
	// Its hooks reported a session; then the process exits.
	f.add("w-1", events.AgentSession{SessionID: sid1, State: "started", Source: "startup"}, "")
	byName := f.queue("w-1", "for w-1 only", time.Time{})
	var restarted events.AgentRestart
	checkfor.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		for _, r := range f.restarts("w-1") {
			if r.State == events.RestartRestarted {
				restarted = r
				return nil
			}
		}
		return fmt.Errorf("not restarted: %+v", f.restarts("w-1"))
	})
	if restarted.Resume != sid1 || restarted.Pane == reg.Pane || restarted.Pane == "" {
		t.Errorf("restarted %+v, want a new pane resuming %s", restarted, sid1)
	}
	f.waitOutput(restarted.Pane, "ARGS --resume "+sid1+" END")
	if got := f.turn(byName); got.State != lifecycle.StateQueued || got.Agent != "w-1" {
		t.Errorf("turn by name = %s on %q, want still queued on w-1", got.State, got.Agent)
	}
	// The old pane is closed, and its close does not retire the agent.
	checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if _, err := f.client.Pane(context.Background(), reg.Pane); err == nil {
			return fmt.Errorf("old pane %s still open", reg.Pane)
		}
		return nil
	})
	for _, ev := range f.history("w-1") {
		if _, ok := ev.Data.(events.AgentExited); ok {
			t.Errorf("the restarted agent was recorded exited: %+v", ev)
		}
	}
}
