package herdrapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
)

func TestCheckAcceptsProtocol20(t *testing.T) {
	srv, _ := herdrapitest.Start(t, herdrapitest.Fast)
	c, err := herdrapi.Connect(context.Background(), srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Ping(context.Background())
	if err != nil || p.Protocol != 20 || p.Version != "0.8.0" {
		t.Errorf("Ping = %+v, %v; want protocol 20, version 0.8.0", p, err)
	}
}

func TestShellPaneRunsInput(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	ws, err := c.CreateWorkspace(ctx, herdrapi.CreateRequest{Label: "work"})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Workspace.Label != "work" || ws.RootPane.WorkspaceID != ws.Workspace.WorkspaceID {
		t.Errorf("CreateWorkspace = %+v", ws)
	}
	dir := t.TempDir()
	pane, err := c.Split(ctx, herdrapi.SplitRequest{
		Direction: herdrapi.SplitRight, TargetPaneID: ws.RootPane.PaneID, CWD: dir,
		Env: map[string]string{"FLEET_GREETING": "hello", "HERDR_PANE_ID": "spoofed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if pane.PaneID == ws.RootPane.PaneID || pane.TabID != ws.Tab.TabID {
		t.Errorf("Split = %+v, want a new pane in tab %s", pane, ws.Tab.TabID)
	}
	if err := c.SendInput(ctx, pane.PaneID, `echo "$FLEET_GREETING-$((2+3)) $HERDR_PANE_ID $HERDR_ENV"; pwd`, "enter"); err != nil {
		t.Fatal(err)
	}
	// The caller's env reaches the shell; herdr's own variables win.
	herdrapitest.ReadContains(t, c, pane.PaneID, "hello-5 "+pane.PaneID+" 1")
	herdrapitest.ReadContains(t, c, pane.PaneID, dir)

	in := srv.Input(pane.PaneID)
	if len(in) != 1 || !strings.HasSuffix(string(in[0].Data), "; pwd\r") || bytes.Contains(in[0].Data, []byte("\x1b[200~")) {
		t.Errorf("send_input wrote %q, want one unbracketed write ending in Enter", in)
	}
	panes, err := c.Panes(ctx, ws.Workspace.WorkspaceID)
	if err != nil || len(panes) != 2 {
		t.Errorf("Panes = %d panes, %v; want 2", len(panes), err)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil || len(snap.Panes) != 2 || len(snap.Layouts) != 1 || snap.Protocol != 20 {
		t.Errorf("Snapshot = %+v, %v", snap, err)
	}
	tab, err := c.CreateTab(ctx, herdrapi.CreateRequest{WorkspaceID: ws.Workspace.WorkspaceID})
	if err != nil || tab.RootPane.TabID != tab.Tab.TabID || tab.Tab.TabID == ws.Tab.TabID {
		t.Errorf("CreateTab = %+v, %v", tab, err)
	}
	if _, err := c.Split(ctx, herdrapi.SplitRequest{Direction: herdrapi.SplitDown, Env: map[string]string{"BAD=KEY": "x"}}); !errors.Is(err, herdrapi.ErrInvalidEnv) {
		t.Errorf("Split with a bad env key = %v, want ErrInvalidEnv", err)
	}
}

func TestSendTextIsRawAndKeysAreSeparate(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	id := herdrapitest.ShellPane(t, c).PaneID
	if err := c.SendText(ctx, id, "echo raw-$((40+2))"); err != nil {
		t.Fatal(err)
	}
	herdrapitest.ReadContains(t, c, id, "echo raw-$((40+2))") // echoed, not yet run
	if err := c.SendKeys(ctx, id, "enter", "C-l", "ctrl+u", "alt+b", "F5", "shift+tab", "x"); err != nil {
		t.Fatal(err)
	}
	herdrapitest.ReadContains(t, c, id, "raw-42")
	got := srv.Input(id)
	want := []string{"echo raw-$((40+2))", "\r", "\x0c", "\x15", "\x1bb", "\x1b[15~", "\x1b[Z", "x"}
	if len(got) != len(want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
	for i := range want {
		if string(got[i].Data) != want[i] {
			t.Errorf("write %d = %q, want %q", i, got[i].Data, want[i])
		}
	}

	for _, bad := range [][]string{{"prefix+c"}, {"enter", "hyperspace"}, {"ctrl+"}} {
		err := c.SendKeys(ctx, id, bad...)
		var apiErr *herdrapi.APIError
		if !errors.Is(err, herdrapi.ErrInvalidKey) || !errors.As(err, &apiErr) || apiErr.Message == "" {
			t.Errorf("SendKeys(%q) = %v, want ErrInvalidKey with a message", bad, err)
		}
	}
	if n := len(srv.Input(id)); n != len(want) {
		t.Errorf("invalid keys wrote something: %d writes, want %d", n, len(want))
	}
}

func TestAgentDetectedFromForegroundProcess(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	stream, err := c.Subscribe(ctx, herdrapi.Lifecycle(herdrapi.EventPaneAgentDetected))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	id := herdrapitest.ShellPane(t, c).PaneID
	if _, err := c.Agent(ctx, id); !errors.Is(err, herdrapi.ErrAgentNotFound) {
		t.Errorf("Agent(plain shell) = %v, want ErrAgentNotFound", err)
	}
	// Typed into the shell, the wrapper becomes the foreground job.
	if err := c.SendInput(ctx, id, "env HERDR_AGENT=claude-code sh -c 'echo started; sleep 30'", "enter"); err != nil {
		t.Fatal(err)
	}
	ev := herdrapitest.NextEvent(t, stream, id, herdrapi.EventPaneAgentDetected)
	if ev.Agent != "claude" || !ev.Lifecycle {
		t.Errorf("detected event = %+v, want agent claude (claude-code normalised)", ev)
	}
	info := herdrapitest.StatusIs(t, c, id, herdrapi.StatusIdle, herdrapi.StatusDone)
	if info.Agent != "claude" {
		t.Errorf("Agent = %+v, want claude", info)
	}
	agents, err := c.Agents(ctx)
	if err != nil || len(agents) != 1 || agents[0].PaneID != id {
		t.Errorf("Agents = %+v, %v; want the one pane", agents, err)
	}
	// ctrl+c ends the job: the shell is in the foreground again.
	if err := c.SendKeys(ctx, id, "ctrl+c"); err != nil {
		t.Fatal(err)
	}
	ev = herdrapitest.NextEvent(t, stream, id, herdrapi.EventPaneAgentDetected)
	if ev.Agent != "" {
		t.Errorf("after ctrl+c detected %+v, want no agent", ev)
	}
	_ = srv
}

// screenScript walks through Claude's screens one stage per Enter.
const screenScript = `printf '╭────╮\n│ ❯ \n╰────╯\n'; read start
printf '\033]0;⠋ Claude\007thinking\n'; read a
printf '\033]0;✳ Claude\007╭────╮\n│ ❯ \n╰────╯\n'; read b
printf 'Allow Bash(ls)?\n 1. Yes\nEnter to confirm · Esc to cancel\n'; read c
printf '\033]0;⠙ Claude\007working again\n'; read d
printf '❯ \n'; printf '\033]0;✳ Claude\007'; sleep 30`

func TestStatusFollowsScreenRules(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(screenScript), Name: "screen"})
	fresh := herdrapitest.StatusIs(t, c, "screen", herdrapi.StatusIdle) // started, never worked: seen
	// Subscribed now, the stream sees exactly the transitions below: it
	// starts at the current sequence and, unfiltered, sends no initial event.
	stream, err := c.Subscribe(ctx, []herdrapi.Subscription{{Type: herdrapi.EventPaneAgentStatusChanged, PaneID: p.ID}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()

	c.SendKeys(ctx, p.ID, "enter")
	working := herdrapitest.StatusIs(t, c, "screen", herdrapi.StatusWorking)
	if working.StateChangeSeq <= fresh.StateChangeSeq {
		t.Errorf("state_change_seq %d after %d, want it to grow", working.StateChangeSeq, fresh.StateChangeSeq)
	}
	if working.TerminalTitleStripped != "Claude" {
		t.Errorf("title stripped = %q, want Claude", working.TerminalTitleStripped)
	}
	c.SendKeys(ctx, p.ID, "enter")
	done := herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusDone) // finished, not yet seen
	if done.StateChangeSeq <= working.StateChangeSeq {
		t.Errorf("state_change_seq %d after %d, want it to grow", done.StateChangeSeq, working.StateChangeSeq)
	}
	c.SendKeys(ctx, p.ID, "enter")
	herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusBlocked)
	c.SendKeys(ctx, p.ID, "enter")
	herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusWorking)
	c.SendKeys(ctx, p.ID, "enter")
	done = herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusDone)

	// Focus marks it seen: done → idle without a new state change.
	if _, err := c.FocusPane(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	idle := herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusIdle)
	if idle.StateChangeSeq != done.StateChangeSeq {
		t.Errorf("focus changed state_change_seq %d → %d", done.StateChangeSeq, idle.StateChangeSeq)
	}

	// The per-pane subscription saw every transition, in the dotted format.
	var seen []herdrapi.AgentStatus
	for _, want := range []herdrapi.AgentStatus{"working", "done", "blocked", "working", "done", "idle"} {
		ev := herdrapitest.NextEvent(t, stream, p.ID, herdrapi.EventPaneAgentStatusChanged)
		if ev.Lifecycle || !bytes.Contains(ev.Raw, []byte(`"event":"pane.agent_status_changed"`)) || ev.Agent != "claude" {
			t.Errorf("status event %s, want a dotted untagged line for claude", ev.Raw)
		}
		seen = append(seen, ev.AgentStatus)
		if ev.AgentStatus != want {
			t.Fatalf("status events %v, want next %s", seen, want)
		}
	}
}

func TestReportAgentAuthority(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c", "sleep 30"}})
	report := func(state herdrapi.AgentStatus, source string, seq uint64) {
		t.Helper()
		err := c.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: p.ID, Source: source, Agent: "claude", State: state, Seq: seq})
		if err != nil {
			t.Fatalf("ReportAgent(%s, %s, %d) = %v, want ok", state, source, seq, err)
		}
	}
	report(herdrapi.StatusWorking, "fleetd:claude", 10)
	first := herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusWorking) // a hook label makes it an agent
	report(herdrapi.StatusIdle, "fleetd:claude", 9)                    // stale: ignored, still ok
	report(herdrapi.StatusIdle, "herdr:claude", 50)                    // herdr's own source: state ignored
	if info, _ := c.Agent(ctx, p.ID); info.AgentStatus != herdrapi.StatusWorking || info.StateChangeSeq != first.StateChangeSeq {
		t.Errorf("after ignored reports: %+v, want still working", info)
	}
	report(herdrapi.StatusIdle, "fleetd:claude", 11)
	herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusDone)

	// Hook authority beats the screen: this agent's title says working.
	q := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(`printf '\033]0;⠋ busy\007'; sleep 30`)})
	herdrapitest.StatusIs(t, c, q.ID, herdrapi.StatusWorking)
	if err := c.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: q.ID, Source: "fleetd:claude", Agent: "claude", State: herdrapi.StatusBlocked, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	herdrapitest.StatusIs(t, c, q.ID, herdrapi.StatusBlocked)
	// A label that contradicts the detected agent is ignored.
	c.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: q.ID, Source: "other", Agent: "codex", State: herdrapi.StatusIdle, Seq: 1})
	if info, _ := c.Agent(ctx, q.ID); info.AgentStatus != herdrapi.StatusBlocked {
		t.Errorf("conflicting label changed status to %s", info.AgentStatus)
	}
	if err := c.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: "w9:p9", Source: "s", Agent: "claude", State: herdrapi.StatusIdle}); !errors.Is(err, herdrapi.ErrPaneNotFound) {
		t.Errorf("ReportAgent on a missing pane = %v, want ErrPaneNotFound", err)
	}
}

// TestReportAgentRejectsDone sends a request herdr's schema forbids on
// purpose, so it collects the violations instead of failing on them, and
// checks that both the schema and the server refuse it.
func TestReportAgentRejectsDone(t *testing.T) {
	var violations []error
	cfg := herdrapitest.Fast
	cfg.OnInvalid = func(err error) { violations = append(violations, err) }
	cfg.Validator = herdrschema.Schema(t)
	srv := herdrtest.Start(t, cfg)
	c := herdrapi.New(srv.Path())
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c", "sleep 30"}})
	err := c.ReportAgent(context.Background(), herdrapi.ReportAgentRequest{PaneID: p.ID, Source: "fleetd:claude", Agent: "claude", State: herdrapi.StatusDone, Seq: 1})
	if !errors.Is(err, herdrapi.ErrInvalidRequest) {
		t.Errorf("ReportAgent(done) = %v, want ErrInvalidRequest", err)
	}
	if len(violations) != 1 || !strings.Contains(violations[0].Error(), "state") {
		t.Errorf("schema violations = %v, want one about state", violations)
	}
}

func TestSubscribeReplaysLifecycleEvents(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	root := herdrapitest.ShellPane(t, c)
	split, err := c.Split(ctx, herdrapi.SplitRequest{Direction: herdrapi.SplitDown})
	if err != nil {
		t.Fatal(err)
	}
	agent := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(`printf '❯ \n'; sleep 30`)})
	herdrapitest.StatusIs(t, c, agent.ID, herdrapi.StatusIdle)

	subs := append(herdrapi.Lifecycle(herdrapi.EventPaneCreated, herdrapi.EventLayoutUpdated, herdrapi.EventWorkspaceCreated),
		herdrapi.Subscription{Type: herdrapi.EventPaneAgentStatusChanged, PaneID: agent.ID, AgentStatus: herdrapi.StatusIdle})
	stream, err := c.Subscribe(ctx, subs)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	// Events from before the subscription are replayed, in order, and a
	// filtered status subscription starts with the current status.
	var created []string
	var status *herdrapi.Event
	for len(created) < 3 || status == nil {
		ev := herdrapitest.NextEvent(t, stream, "", herdrapi.EventPaneCreated, herdrapi.EventPaneAgentStatusChanged)
		switch ev.Kind {
		case herdrapi.EventPaneCreated:
			if !ev.Lifecycle || ev.Pane == nil || !bytes.Contains(ev.Raw, []byte(`"event":"pane_created"`)) {
				t.Errorf("replayed %s, want a snake_case lifecycle line with the pane", ev.Raw)
			}
			created = append(created, ev.PaneID)
		default:
			status = &ev
		}
	}
	if want := []string{root.PaneID, split.PaneID, agent.ID}; fmt.Sprint(created) != fmt.Sprint(want) {
		t.Errorf("replayed pane_created for %v, want %v", created, want)
	}
	if status.AgentStatus != herdrapi.StatusIdle || status.Lifecycle || status.PaneID != agent.ID {
		t.Errorf("initial status event = %+v, want idle for %s in the dotted format", status, agent.ID)
	}
	if _, err := c.Subscribe(ctx, []herdrapi.Subscription{{Type: herdrapi.EventPaneAgentStatusChanged, PaneID: "w9:p9"}}); !errors.Is(err, herdrapi.ErrPaneNotFound) {
		t.Errorf("Subscribe on a missing pane = %v, want ErrPaneNotFound", err)
	}
	// Live events follow the replay.
	third, err := c.Split(ctx, herdrapi.SplitRequest{Direction: herdrapi.SplitRight})
	if err != nil {
		t.Fatal(err)
	}
	herdrapitest.NextEvent(t, stream, third.PaneID, herdrapi.EventPaneCreated)
}

func TestOutputMatchedSubscription(t *testing.T) {
	_, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	id := herdrapitest.ShellPane(t, c).PaneID
	stream, err := c.Subscribe(ctx, []herdrapi.Subscription{{Type: herdrapi.EventPaneOutputMatched, PaneID: id,
		Source: herdrapi.SourceRecent, Match: &herdrapi.OutputMatch{Type: "regex", Value: `RESULT=\d+$`}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	// Input that beats the shell's first prompt lands after it ("# RESULT=42"),
	// so the pattern is anchored only at the end; the echoed command does
	// not match it.
	c.SendInput(ctx, id, "echo RESULT=$((6*7))", "enter")
	ev := herdrapitest.NextEvent(t, stream, id, herdrapi.EventPaneOutputMatched)
	if !strings.HasSuffix(ev.MatchedLine, "RESULT=42") || ev.Read == nil || ev.Read.PaneID != id {
		t.Errorf("output event = %+v, want matched line RESULT=42 with the read", ev)
	}
	if _, err := c.Subscribe(ctx, []herdrapi.Subscription{{Type: herdrapi.EventPaneOutputMatched, PaneID: id,
		Source: herdrapi.SourceRecent, Match: &herdrapi.OutputMatch{Type: "regex", Value: `(`}}}); !errors.Is(err, herdrapi.ErrInvalidRegex) {
		t.Errorf("Subscribe with a bad regex = %v, want ErrInvalidRegex", err)
	}
}

func TestPaneExitEmitsExitedThenClosed(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	keep := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c", "sleep 30"}})
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c", "read x; echo bye; exit 3"}})
	stream, err := c.Subscribe(ctx, herdrapi.Lifecycle(herdrapi.EventPaneExited, herdrapi.EventPaneClosed))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	c.SendKeys(ctx, p.ID, "enter")
	if ev := herdrapitest.NextEvent(t, stream, p.ID, herdrapi.EventPaneExited, herdrapi.EventPaneClosed); ev.Kind != herdrapi.EventPaneExited || ev.WorkspaceID != p.WorkspaceID {
		t.Errorf("first event = %+v, want pane.exited", ev)
	}
	herdrapitest.NextEvent(t, stream, p.ID, herdrapi.EventPaneClosed)
	if !bytes.Contains(srv.Output(p.ID), []byte("bye")) {
		t.Errorf("output %q lacks the last words", srv.Output(p.ID))
	}
	if _, err := c.Pane(ctx, p.ID); !errors.Is(err, herdrapi.ErrPaneNotFound) {
		t.Errorf("Pane after exit = %v, want ErrPaneNotFound", err)
	}
	// pane.close kills the process and reports only pane.closed.
	if err := c.ClosePane(ctx, keep.ID); err != nil {
		t.Fatal(err)
	}
	if ev := herdrapitest.NextEvent(t, stream, keep.ID, herdrapi.EventPaneExited, herdrapi.EventPaneClosed); ev.Kind != herdrapi.EventPaneClosed {
		t.Errorf("close emitted %s first, want pane.closed", ev.Kind)
	}
}

func TestSocketKilledAndRestarted(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c", "echo still-here; sleep 30"}})
	stream, err := c.Subscribe(ctx, herdrapi.Lifecycle(herdrapi.EventPaneCreated))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	herdrapitest.NextEvent(t, stream, p.ID, herdrapi.EventPaneCreated)

	srv.KillSocket()
	select {
	case _, ok := <-stream.Events():
		for ok {
			_, ok = <-stream.Events()
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open after the socket was killed")
	}
	if !errors.Is(stream.Err(), herdrapi.ErrDisconnected) {
		t.Errorf("stream.Err() = %v, want ErrDisconnected", stream.Err())
	}
	if _, err := c.Ping(ctx); !errors.Is(err, herdrapi.ErrNotRunning) {
		t.Errorf("Ping with the socket gone = %v, want ErrNotRunning", err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(ctx); err != nil {
		t.Fatalf("Check after restart: %v", err)
	}
	herdrapitest.ReadContains(t, c, p.ID, "still-here") // the pane survived
	again, err := c.Subscribe(ctx, herdrapi.Lifecycle(herdrapi.EventPaneCreated))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	herdrapitest.NextEvent(t, again, p.ID, herdrapi.EventPaneCreated) // replayed again
	if err := stream.Close(); err != nil {
		t.Errorf("Close after disconnect = %v", err)
	}
}

// promptScript is a stand-in for Claude's composer: it turns bracketed
// paste on, shows a prompt, and reads.
const promptScript = `printf '\033[?2004h╭─╮\n│ ❯ \n'; while read line; do printf '\033]0;⠋ Claude\007got:%s\n' "$line"; done`

func TestPromptSendsEnterSeparatelyAfter300ms(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(promptScript)})
	before := herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusIdle)
	if !before.InteractiveReady {
		t.Errorf("idle detected agent not interactive_ready: %+v", before)
	}
	// An agent with nothing on screen yet is idle too (herdr's fallback):
	// wait for the composer, which comes with bracketed paste on.
	herdrapitest.ReadContains(t, c, p.ID, "❯")
	info, err := c.Prompt(ctx, herdrapi.PromptRequest{Target: p.ID, Text: "fix the\nbug"})
	if err != nil {
		t.Fatal(err)
	}
	if info.PaneID != p.ID {
		t.Errorf("Prompt = %+v", info)
	}
	// herdr answers before the Enter: only the text has been written.
	if in := srv.Input(p.ID); len(in) != 1 || string(in[0].Data) != "\x1b[200~fix the\nbug\x1b[201~" {
		t.Fatalf("writes right after Prompt = %q, want only the bracketed text", in)
	}
	var in []herdrtest.InputWrite
	checkfor.Eventually(t, 3*time.Second, 20*time.Millisecond, func() error {
		if in = srv.Input(p.ID); len(in) < 2 {
			return fmt.Errorf("%d writes, want the Enter", len(in))
		}
		return nil
	})
	if string(in[1].Data) != "\r" {
		t.Errorf("second write = %q, want a lone \\r", in[1].Data)
	}
	if gap := in[1].At.Sub(in[0].At); gap < 300*time.Millisecond {
		t.Errorf("Enter came %v after the text, want ≥300ms", gap)
	}
	after := herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusWorking)
	if after.StateChangeSeq <= before.StateChangeSeq {
		t.Errorf("state_change_seq did not grow: %d → %d", before.StateChangeSeq, after.StateChangeSeq)
	}

	if _, err := c.Prompt(ctx, herdrapi.PromptRequest{Target: p.ID}); !errors.Is(err, herdrapi.ErrEmptyAgentPrompt) {
		t.Errorf("empty Prompt = %v, want ErrEmptyAgentPrompt", err)
	}
	shell := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c", "sleep 30"}})
	if _, err := c.Prompt(ctx, herdrapi.PromptRequest{Target: shell.ID, Text: "x"}); !errors.Is(err, herdrapi.ErrAgentNotFound) {
		t.Errorf("Prompt to a plain shell = %v, want ErrAgentNotFound", err)
	}
	// A hook label alone does not make a prompt target ready: the
	// foreground process is not the agent.
	c.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: shell.ID, Source: "fleetd:claude", Agent: "claude", State: herdrapi.StatusIdle, Seq: 1})
	if _, err := c.Prompt(ctx, herdrapi.PromptRequest{Target: shell.ID, Text: "x"}); !errors.Is(err, herdrapi.ErrAgentNotReady) {
		t.Errorf("Prompt to a hook-only agent = %v, want ErrAgentNotReady", err)
	}
}

func TestPromptWithWait(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	// Works on a prompt, then shows the prompt box and an idle title.
	script := `printf '\033[?2004h❯ \n'; while read line; do printf '\033]0;⠋ Claude\007'; sleep 0.3; printf '\033]0;✳ Claude\007❯ \n'; done`
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(script)})
	before := herdrapitest.StatusIs(t, c, p.ID, herdrapi.StatusIdle)
	info, err := c.Prompt(ctx, herdrapi.PromptRequest{Target: p.ID, Text: "go", Wait: &herdrapi.WaitOptions{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !info.AgentStatus.Ready() || info.StateChangeSeq <= before.StateChangeSeq {
		t.Errorf("Prompt with wait = %+v, want finished with a newer state_change_seq than %d", info, before.StateChangeSeq)
	}
	got, err := c.WaitAgent(ctx, p.ID, herdrapi.WaitOptions{Until: []herdrapi.AgentStatus{herdrapi.StatusDone}, Timeout: time.Second})
	if err != nil || got.AgentStatus != herdrapi.StatusDone {
		t.Errorf("WaitAgent(done) = %+v, %v; want an immediate done", got, err)
	}
	start := time.Now()
	_, err = c.WaitAgent(ctx, p.ID, herdrapi.WaitOptions{Until: []herdrapi.AgentStatus{herdrapi.StatusBlocked}, Timeout: 200 * time.Millisecond})
	if !errors.Is(err, herdrapi.ErrTimeout) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("WaitAgent(blocked) = %v after %v, want ErrTimeout after 200ms", err, time.Since(start))
	}
}

func TestBracketedPasteFollowsTheProgram(t *testing.T) {
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ctx := context.Background()
	p := herdrapitest.Spawn(t, srv, herdrtest.PaneSpec{Argv: []string{"sh", "-c",
		`printf '\033[?2004hon\n'; read a; printf '\033[?2004loff\n'; read b; echo "b=$b"; sleep 30`}})
	herdrapitest.ReadContains(t, c, p.ID, "on")
	if err := c.SendInput(ctx, p.ID, "one", "enter"); err != nil {
		t.Fatal(err)
	}
	herdrapitest.ReadContains(t, c, p.ID, "off")
	if err := c.SendInput(ctx, p.ID, "two", "enter"); err != nil {
		t.Fatal(err)
	}
	herdrapitest.ReadContains(t, c, p.ID, "b=two")
	in := srv.Input(p.ID)
	want := []string{"\x1b[200~one\x1b[201~\r", "two\r"}
	if len(in) != 2 || string(in[0].Data) != want[0] || string(in[1].Data) != want[1] {
		t.Errorf("writes = %q, want %q", in, want)
	}
}
