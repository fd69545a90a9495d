package herdrbridge_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/proc"
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

// liveScript stands in for an agent a role restarts: recognised as
// claude (HERDR_AGENT), it prints its arguments, draws a prompt box and
// echoes each line it reads.
// One line: a launch word may hold no control character.
const liveScript = `box() { printf '────────────────────\n❯ \n────────────────────\n  ? for shortcuts\n'; }; ` +
	`echo LIVE "$*" END; box; while IFS= read -r line; do echo "GOT: $line"; box; done`

// An idle agent whose process is killed is noticed without a turn coming
// for it, though herdr still labels its pane (the hooks reported the
// agent, and herdr keeps a reported agent), and its role restarts it. The
// attention its dead pane was marked with does not outlive that pane: a
// turn sent to it by name is typed into the new one.
func TestAKilledIdleAgentIsRestartedWithoutATurnAndItsOldAttentionGoes(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) {
		c.Roles = mustRoles(t, `{"roles":{"w-live":{"command":["env","HERDR_AGENT=claude","sh","-c",`+strconv.Quote(liveScript)+`,"sh","{resume}"],
			"restart":"on-failure","restart_backoff":"50ms"}}}`)
	})
	ctx := context.Background()
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-live", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "LIVE  END")
	f.add("w-1", events.AgentSession{SessionID: sid1, State: "started", Source: "startup"}, "")
	if err := f.client.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: reg.Pane, Source: "fleetd:claude", Agent: "claude", State: herdrapi.StatusIdle, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	// What a gateway recorded when a turn came the moment the agent died:
	// the pane showed its shell.
	f.add("w-1", events.AgentAttention{Reason: herdrbridge.AttentionShell, Detail: "the pane's foreground is its shell"}, "")
	killPaneChild(t, f.herdr.Path(), reg.Pane)

	died := f.waitEvent("fleet.agent.w-1.session", func(ev events.Event) bool {
		return ev.Data.(events.AgentSession).State == "ended"
	})
	if d := died.Data.(events.AgentSession); d.Reason != herdrbridge.SessionEndDied {
		t.Errorf("session ended %+v, want died", d)
	}
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
	f.waitOutput(restarted.Pane, "LIVE --resume "+sid1+" END")
	f.add("w-1", events.AgentSession{SessionID: sid1, State: "started", Source: "resume"}, "")
	byName := f.queue("w-1", "for w-1 after its restart", time.Time{})
	f.waitOutput(restarted.Pane, "GOT: for w-1 after its restart")
	f.waitTurn(byName, lifecycle.StateTyped, lifecycle.StateSubmitted)
	for _, ev := range f.history("w-1") {
		if d, ok := ev.Data.(events.AgentAttention); ok && d.Reason != "" && ev.Seq > died.Seq {
			t.Errorf("attention %+v recorded after the death: the dead pane's shell is not the new agent's", d)
		}
	}
}

// killPaneChild kills (-9) the process the pane's shell runs — the
// agent — and waits until it is gone.
func killPaneChild(t *testing.T, socket, pane string) {
	t.Helper()
	var pids, ppids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		env, err := os.ReadFile(dir + "/environ")
		if err != nil || !bytes.Contains(env, []byte("HERDR_PANE_ID="+pane+"\x00")) || !bytes.Contains(env, []byte("HERDR_SOCKET_PATH="+socket+"\x00")) {
			continue
		}
		if st, ok := proc.ReadStat(dir); ok && st.TTY != 0 {
			pids, ppids = append(pids, st.PID), append(ppids, st.PPID)
		}
	}
	victim := 0
	for i, ppid := range ppids {
		if slices.Contains(pids, ppid) && !slices.Contains(pids, ppids[slices.Index(pids, ppid)]) {
			victim = pids[i] // a child of the pane's first process
		}
	}
	if victim == 0 {
		t.Fatalf("no agent process in pane %s (pids %v, parents %v)", pane, pids, ppids)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if _, ok := proc.ReadStat(fmt.Sprintf("/proc/%d", victim)); ok {
			return fmt.Errorf("process %d still there", victim)
		}
		return nil
	})
}
