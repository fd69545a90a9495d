package herdrbridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

func TestQueuedTurnTypedOnceAfterPaneIsIdle(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(busyAgent)})
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusWorking)
	f.start(nil)
	f.register("w-1", p.ID)
	turn := f.queue("w-1", "hello from the lead", time.Time{})

	f.waitOutput(p.ID, "ANSWER: hello from the lead")
	got := f.waitTurn(turn, lifecycle.StateSubmitted)
	if got.SubmittedVia != "herdr" || got.Method != herdrbridge.MethodLanded || got.Pane != p.ID {
		t.Errorf("turn = via %q method %q pane %q; want herdr, %s, %s", got.SubmittedVia, got.Method, got.Pane, herdrbridge.MethodLanded, p.ID)
	}
	out := f.herdr.Output(p.ID)
	ready, echo := bytes.Index(out, []byte("READY")), bytes.Index(out, []byte("hello from the lead"))
	if ready < 0 || echo < ready {
		t.Errorf("prompt echoed at %d, before the agent was ready at %d:\n%s", echo, ready, out)
	}
	f.add("w-1", events.AgentReplied{Reply: "hi"}, turn)
	f.waitTurn(turn, lifecycle.StateReplied)
	if n := f.typedCount(p.ID, "hello from the lead"); n != 1 {
		t.Errorf("prompt written %d times, want 1", n)
	}
	if n := f.count("w-1", ofType(events.TypeAgentTyped, turn)); n != 1 {
		t.Errorf("%d typed events, want 1", n)
	}
	noRepeats(t, f.statuses("w-1"))
}

func TestTwoTurnsTypedInOrderSecondAfterFirstReplied(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(quickAgent)})
	f.register("w-1", p.ID)
	first := f.queue("w-1", "first task", time.Time{})
	second := f.queue("w-1", "second task", time.Time{})
	f.start(nil)

	f.waitOutput(p.ID, "ANSWER: first task")
	f.waitTurn(first, lifecycle.StateSubmitted)
	// The agent is idle again, but the first turn is not replied: the
	// second must wait.
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusIdle, herdrapi.StatusDone)
	if n := f.typedCount(p.ID, "second task"); n != 0 {
		t.Fatalf("second turn typed before the first was replied")
	}
	repliedAt := time.Now()
	f.add("w-1", events.AgentReplied{Reply: "one"}, "")
	f.waitOutput(p.ID, "ANSWER: second task")
	if at := f.typedAt(p.ID, "second task"); at.Before(repliedAt) {
		t.Errorf("second turn typed at %v, before the first was replied at %v", at, repliedAt)
	}
	f.waitTurn(second, lifecycle.StateSubmitted)
	var order []string
	for _, ev := range f.history("w-1") {
		if ev.Type() == events.TypeAgentTyped {
			order = append(order, ev.CorrelationID)
		}
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{first, second}) {
		t.Errorf("typed order %v, want %v", order, []string{first, second})
	}
}

func TestControlSequencesNeverReachThePane(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(quickAgent)})
	f.register("w-1", p.ID)
	f.start(nil)
	text := "look \x1b]0;pwned\x07at \x1b[31mred\x1b[0m\x1b[201~ \u009b2J\x1b[A done\x03"
	want := lifecycle.NormalizeText(text)
	turn := f.queue("w-1", text, time.Time{})

	f.waitOutput(p.ID, "ANSWER: "+want)
	f.waitTurn(turn, lifecycle.StateSubmitted)
	for _, w := range f.herdr.Input(p.ID) {
		if bytes.ContainsAny(w.Data, "\x1b\x03\x07") || bytes.Contains(w.Data, []byte("\u009b")) {
			t.Errorf("a control byte reached the PTY: %q", w.Data)
		}
	}
	info, err := f.client.Pane(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.TerminalTitle == "pwned" {
		t.Errorf("message text retitled the pane")
	}
}

func TestHerdrRestartLosesAndDuplicatesNothing(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(quickAgent)})
	f.register("w-1", p.ID)
	f.start(nil)
	before := f.queue("w-1", "before the outage", time.Time{})
	f.waitOutput(p.ID, "ANSWER: before the outage")
	f.waitTurn(before, lifecycle.StateSubmitted)
	f.add("w-1", events.AgentReplied{Reply: "ok"}, before)
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusIdle, herdrapi.StatusDone)

	host := "fleet.host." + testHost + ".herdr"
	f.herdr.KillSocket()
	f.waitEvent(host, func(ev events.Event) bool { return !ev.Data.(events.HostHerdr).Connected })
	during := f.queue("w-1", "queued during the outage", time.Time{})
	if err := f.herdr.Restart(); err != nil {
		t.Fatal(err)
	}
	f.waitOutput(p.ID, "ANSWER: queued during the outage")
	f.waitTurn(during, lifecycle.StateSubmitted)
	f.add("w-1", events.AgentReplied{Reply: "ok"}, during)

	if n := f.typedCount(p.ID, "queued during the outage"); n != 1 {
		t.Errorf("turn queued in the outage written %d times, want 1", n)
	}
	if n := f.typedCount(p.ID, "before the outage"); n != 1 {
		t.Errorf("turn from before the outage written %d times, want 1", n)
	}
	connects := 0
	for _, ev := range f.read(host) {
		if ev.Data.(events.HostHerdr).Connected {
			connects++
		}
	}
	if connects != 2 {
		t.Errorf("%d herdr connect events, want 2 (boot, reconnect)", connects)
	}

	// A second outage after the pane closed: herdr replays the old
	// pane_closed to the new subscription, and nothing is recorded twice.
	if err := f.client.ClosePane(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("fleet.agent.w-1.exited", anyEvent)
	f.herdr.KillSocket()
	if err := f.herdr.Restart(); err != nil {
		t.Fatal(err)
	}
	// A marker pane closed after the restart: once its exit is recorded,
	// the replayed pane_closed events ahead of it have been handled.
	m := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(quickAgent)})
	f.register("w-marker", m.ID)
	f.waitEvent("fleet.agent.w-marker.status", anyEvent)
	if err := f.client.ClosePane(context.Background(), m.ID); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("fleet.agent.w-marker.exited", anyEvent)
	if n := f.count("w-1", ofType(events.TypeAgentExited, "")); n != 1 {
		t.Errorf("%d exited events, want 1", n)
	}
	noRepeats(t, f.statuses("w-1"))
}

func TestRestartBetweenTypedAndSubmittedNeverRetypes(t *testing.T) {
	f := newFleet(t)
	p := f.readyAgent("w-1", mutedAgent)
	slow := func(c *herdrbridge.BridgeConfig) { c.SubmitTimeout = time.Minute }

	// Gateway 1 types turn one and dies before anything proves submission.
	g1 := f.start(slow)
	one := f.queue("w-1", "turn one", time.Time{})
	f.waitOutput(p.ID, "GOT: turn one")
	g1.kill(t)
	if got := f.turn(one); got.State != lifecycle.StateTyped {
		t.Fatalf("turn one is %q, want typed", got.State)
	}

	// Gateway 2 finds it typed; the hook's UserPromptSubmit resolves it.
	g2 := f.start(slow)
	f.add("w-1", events.AgentSubmitted{Via: "hook", PromptID: "p1"}, one)
	f.waitTurn(one, lifecycle.StateSubmitted)
	f.add("w-1", events.AgentReplied{Reply: "done", PromptID: "p1"}, one)
	f.waitTurn(one, lifecycle.StateReplied)

	// Gateway 2 types turn two and dies too; gateway 3 gets no proof, so
	// it presses Enter once more, then gives up as indeterminate.
	two := f.queue("w-1", "turn two", time.Time{})
	f.waitOutput(p.ID, "GOT: turn two")
	g2.kill(t)
	f.start(func(c *herdrbridge.BridgeConfig) { c.SubmitTimeout = 700 * time.Millisecond })
	got := f.waitTurn(two, lifecycle.StateFailed)
	if got.Reason != events.ReasonIndeterminate {
		t.Errorf("turn two failed %q, want indeterminate", got.Reason)
	}

	for _, s := range []string{"turn one", "turn two"} {
		if n := f.typedCount(p.ID, s); n != 1 {
			t.Errorf("%q written %d times, want 1", s, n)
		}
	}
	if n := f.count("w-1", ofType(events.TypeAgentTyped, one)); n != 1 {
		t.Errorf("turn one has %d typed events, want 1 (no extra Enter once the hook proved it)", n)
	}
	enters := 0
	for _, w := range f.herdr.Input(p.ID) {
		if w.At.After(f.typedAt(p.ID, "turn two")) && string(w.Data) == "\r" {
			enters++
		}
	}
	if enters != 2 {
		t.Errorf("%d Enters after turn two's text, want 2 (herdr's own, and the one retry)", enters)
	}
}

func TestDeadlineAndPaneExitFailTurns(t *testing.T) {
	f := newFleet(t)
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(foreverBusy)})
	herdrapitest.StatusIs(t, f.client, p.ID, herdrapi.StatusWorking)
	f.register("w-1", p.ID)
	f.start(nil)
	late := f.queue("w-1", "too late", time.Now().Add(300*time.Millisecond))
	waiting := f.queue("w-1", "waiting", time.Time{})
	if got := f.waitTurn(late, lifecycle.StateFailed); got.Reason != events.ReasonTimeout {
		t.Errorf("late turn failed %q, want timeout", got.Reason)
	}
	if err := f.client.ClosePane(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.waitTurn(waiting, lifecycle.StateFailed); got.Reason != events.ReasonPaneExited {
		t.Errorf("waiting turn failed %q, want pane_exited", got.Reason)
	}
	f.waitEvent("fleet.agent.w-1.exited", anyEvent)
	if n := f.typedCount(p.ID, "waiting"); n != 0 {
		t.Errorf("a turn was typed into a working pane")
	}
}

func TestSpawnRefusesBoundaryCrossingBeforeHerdr(t *testing.T) {
	f := newFleet(t)
	b := f.newBridge(nil)
	ctx := context.Background()
	cases := []herdrbridge.SpawnRequest{
		{Role: "w-claude", Name: "w-1", Env: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}},
		{Role: "w-claude", Name: "w-1", Env: map[string]string{"ANTHROPIC_API_KEY": "sk-test"}},
		{Role: "w-gw", Name: "w-1", Env: map[string]string{"ANTHROPIC_BASE_URL": "http://elsewhere"}},
	}
	for _, req := range cases {
		if _, err := b.Spawn(ctx, req); !errors.Is(err, roles.ErrBoundary) {
			t.Errorf("Spawn(%v) = %v, want ErrBoundary", req.Env, err)
		}
	}
	snap, err := f.client.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Panes) != 0 {
		t.Errorf("a refused spawn created %d panes", len(snap.Panes))
	}
	if n := f.count("w-1", anyEvent); n != 0 {
		t.Errorf("a refused spawn left %d events", n)
	}
}

func TestSpawnLaunchesRoleInPaneWithFleetEnv(t *testing.T) {
	f := newFleet(t)
	f.start(nil)
	b := f.newBridge(nil)
	ctx := context.Background()
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: "w-2", Parent: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Origin != "spawned" || reg.Host != testHost || reg.Pane == "" || reg.EnvClass != roles.EnvClean {
		t.Errorf("registered %+v", reg)
	}
	f.waitOutput(reg.Pane, "LAUNCHED w-2 w-sh "+testHost)
	if _, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: "w-2"}); !errors.Is(err, herdrbridge.ErrAgentExists) {
		t.Errorf("second spawn of w-2 = %v, want ErrAgentExists", err)
	}
	// The running bridge owns it: closing its pane is recorded.
	f.waitEvent("fleet.agent.w-2.status", anyEvent)
	if err := f.client.ClosePane(ctx, reg.Pane); err != nil {
		t.Fatal(err)
	}
	f.waitEvent("fleet.agent.w-2.exited", anyEvent)
}

// A pane gets its agent's own NATS key when the bridge hands out
// per-agent keys, and the token only when it does not: never the
// gateway's key or token beside the agent's. An agent without a key of
// its own is refused before a pane is made.
func TestSpawnHandsAPaneOnlyItsAgentsNATSCredentials(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		launch herdrbridge.Launch
		agent  string
		want   string // the pane's line, or "" when the spawn is refused
	}{
		{"the agent's own key", herdrbridge.Launch{NATSCreds: "/k/gateway-h.nk", NATSToken: "T",
			AgentCreds: func(a string) string { return map[string]string{"w-5": "/k/agents/agent-w-5.nk"}[a] }},
			"w-5", "NATS creds=/k/agents/agent-w-5.nk token=none END"},
		{"no key of its own", herdrbridge.Launch{NATSCreds: "/k/gateway-h.nk",
			AgentCreds: func(string) string { return "" }}, "w-6", ""},
		{"the token, without keys", herdrbridge.Launch{NATSToken: "T"}, "w-7", "NATS creds=none token=T END"},
	} {
		b := f.newBridge(func(c *herdrbridge.BridgeConfig) { c.Launch = tc.launch })
		reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-nats", Name: tc.agent})
		if tc.want == "" {
			if !errors.Is(err, herdrbridge.ErrNoCredentials) {
				t.Errorf("%s: spawn = %v, want ErrNoCredentials", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		f.waitOutput(reg.Pane, tc.want)
	}
	if n := f.count("w-6", anyEvent); n != 0 {
		t.Errorf("a refused spawn left %d events", n)
	}
}

func TestAdoptedPaneCrossingBoundaryIsReported(t *testing.T) {
	f := newFleet(t)
	f.start(nil)
	b := f.newBridge(nil)
	ctx := context.Background()
	p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(quickAgent), Env: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
	if _, err := b.Adopt(ctx, "w9:p9", "w-3", "w-claude"); !errors.Is(err, herdrapi.ErrPaneNotFound) {
		t.Errorf("Adopt of a missing pane = %v, want ErrPaneNotFound", err)
	}
	reg, err := b.Adopt(ctx, p.ID, "w-3", "w-claude")
	if err != nil {
		t.Fatal(err)
	}
	if reg.Origin != "adopted" || reg.Pane != p.ID {
		t.Errorf("registered %+v", reg)
	}
	if _, err := b.Adopt(ctx, p.ID, "w-4", "w-claude"); !errors.Is(err, herdrbridge.ErrPaneOwned) {
		t.Errorf("Adopt of an owned pane = %v, want ErrPaneOwned", err)
	}
	ev := f.waitEvent("fleet.agent.w-3.status", func(ev events.Event) bool {
		return ev.Data.(events.AgentStatusChanged).Violation != ""
	})
	if v := ev.Data.(events.AgentStatusChanged).Violation; !contains(v, "ANTHROPIC_BASE_URL") {
		t.Errorf("violation %q does not name ANTHROPIC_BASE_URL", v)
	}
}

// Agents that herdr reports one after another (as it does a hundred
// starting) are checked together: every crossing is still reported, by
// passes over /proc at least a second apart rather than one per agent.
func TestBoundaryChecksOfAgentsComingTogetherShareTheirPasses(t *testing.T) {
	f := newFleet(t)
	m := herdrbridge.NewMetrics()
	began := time.Now()
	f.start(func(c *herdrbridge.BridgeConfig) { c.Metrics = m })
	b := f.newBridge(nil)
	ctx := context.Background()
	const n = 8
	for i := range n {
		p := herdrapitest.Spawn(t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(quickAgent), Env: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
		if _, err := b.Adopt(ctx, p.ID, fmt.Sprintf("w-%d", i+1), "w-claude"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // apart, as herdr reports agents starting
	}
	for i := range n {
		f.waitEvent(fmt.Sprintf("fleet.agent.w-%d.status", i+1), func(ev events.Event) bool {
			return contains(ev.Data.(events.AgentStatusChanged).Violation, "ANTHROPIC_BASE_URL")
		})
	}
	// One pass when the bridge connected, then at most one a second;
	// one per agent (and per herdr event about it) would be n or more.
	checks, took := testutil.ToFloat64(m.BoundaryChecks), time.Since(began)
	if most := 2 + math.Floor(took.Seconds()); checks > most || checks < 1 {
		t.Errorf("%v passes over /proc for %d agents in %s; want at most %v", checks, n, took.Round(time.Millisecond), most)
	}
}

func TestTurnFailsWhenAgentStaysBlocked(t *testing.T) {
	f := newFleet(t)
	// After reading a prompt the agent asks for permission and waits.
	asks := box + `box; IFS= read -r line; echo "Allow this? esc to cancel · enter to confirm"; exec sleep 600`
	f.readyAgent("w-1", asks)
	f.start(func(c *herdrbridge.BridgeConfig) { c.BlockedTimeout = 500 * time.Millisecond })
	turn := f.queue("w-1", "needs permission", time.Time{})
	got := f.waitTurn(turn, lifecycle.StateFailed)
	if got.Reason != events.ReasonBlocked || got.SubmittedVia != "herdr" {
		t.Errorf("turn failed %q after submission via %q; want blocked, herdr", got.Reason, got.SubmittedVia)
	}
}

func TestSpawnResumesThroughTheRoleCommand(t *testing.T) {
	f := newFleet(t)
	b := f.newBridge(nil)
	ctx := context.Background()
	// A command that can neither place nor append --resume is refused
	// before herdr is touched.
	if _, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: "w-1", Resume: sid1}); !errors.Is(err, herdrbridge.ErrNoResume) {
		t.Fatalf("resume with a role that cannot = %v, want ErrNoResume", err)
	}
	if snap, err := f.client.Snapshot(ctx); err != nil || len(snap.Panes) != 0 {
		t.Fatalf("a refused resume left panes: %v %v", snap.Panes, err)
	}
	fresh, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-2"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(fresh.Pane, "ARGS  END")
	resumed, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-3", Resume: sid1})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(resumed.Pane, "ARGS --resume "+sid1+" END")
}

// sid1 is a Claude Code session id, in its format (a UUID): the only one
// a spawn resumes.
const sid1 = "0b5e1c2a-7d3f-4e8b-9a61-2c4d6e8f0a1b"
