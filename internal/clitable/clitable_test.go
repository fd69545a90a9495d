package clitable

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/worktree"
)

func TestAgentStatusSaysWhatToNotice(t *testing.T) {
	tests := []struct {
		name  string
		agent projections.Agent
		want  string
	}{
		{"idle", projections.Agent{Status: "idle"}, "idle"},
		{"failed to start wins over exited", projections.Agent{Status: "idle", FailedToStart: "no claude", Exited: true}, "idle (failed to start: no claude)"},
		{"stale", projections.Agent{Status: "working", Stale: true}, "working (stale: its host is silent)"},
		{"stale wins over starting", projections.Agent{Status: "idle", Stale: true, Starting: true}, "idle (stale: its host is silent)"},
		{"restarted, needing a person, over its boundary",
			projections.Agent{Status: "idle", Restarts: 2, NeedsAttention: "dialog open", Violation: "env"},
			"idle restarts=2 NEEDS ATTENTION: dialog open BOUNDARY"},
		{"blocked on a permission dialog",
			projections.Agent{Agent: "w-1", Status: "blocked", Dialog: &projections.Dialog{Question: "Do you want to proceed?", Options: []string{"Yes", "No"}}},
			`blocked ASKS "Do you want to proceed?" (2 options: fleetd answer w-1)`},
		{"near its budget",
			projections.Agent{Status: "idle", Budget: &projections.BudgetState{State: projections.BudgetWarning, Scope: "role", Limit: "usd_per_day", Used: 17, Max: 20}},
			"idle BUDGET 85% (role usd_per_day)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agentStatus(tt.agent); got != tt.want {
				t.Errorf("agentStatus = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBranchSaysWhereTheWorktreeStands(t *testing.T) {
	tests := []struct {
		w    events.Worktree
		want string
	}{
		{events.Worktree{}, "-"},
		{events.Worktree{Branch: "fleet/a"}, "fleet/a"},
		{events.Worktree{Branch: "fleet/a", Ahead: 2, Dirty: 1}, "fleet/a (2 ahead, 1 dirty)"},
		{events.Worktree{Branch: "fleet/a", Dirty: 3}, "fleet/a (3 dirty)"},
		{events.Worktree{Branch: "fleet/a", Ahead: 2, Removed: true}, "fleet/a (worktree removed)"},
		{events.Worktree{Branch: "fleet/a", Kept: "1 uncommitted file"}, "fleet/a (worktree KEPT: 1 uncommitted file)"},
	}
	for _, tt := range tests {
		if got := branch(tt.w); got != tt.want {
			t.Errorf("branch(%+v) = %q, want %q", tt.w, got, tt.want)
		}
	}
}

func TestAgoIsCoarse(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{0, "now"}, {42 * time.Second, "42s ago"}, {5 * time.Minute, "5m ago"}, {30 * time.Hour, "30h ago"}, {72 * time.Hour, "2026-11-27"},
	}
	for _, tt := range tests {
		if got := ago(now, now.Add(-tt.ago)); got != tt.want {
			t.Errorf("ago(%s) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := ago(now, time.Time{}); got != "-" {
		t.Errorf("ago(zero) = %q, want -", got)
	}
}

func TestWorktreesSaysWhatPruneDid(t *testing.T) {
	rows := []worktree.Row{
		{Entry: worktree.Entry{Name: "a", Path: "/wt/a"}, Merged: true, Agent: "a", Live: true},
		{Entry: worktree.Entry{Name: "b", Path: "/wt/b", Missing: true}, Agent: "b", Pruned: true},
		{Entry: worktree.Entry{Name: "c", Path: "/wt/c"}, Kept: "1 commit not merged"},
	}
	var out bytes.Buffer
	if err := Worktrees(true).Write(&out, rows, time.Time{}); err != nil {
		t.Fatal(err)
	}
	got, want := out.String(), `NAME  BRANCH   DIRTY    AHEAD  MERGED  PUSHED  AGENT       PATH   PRUNE
a     fleet/a  0        0      yes     no      a           /wt/a  in use
b     fleet/b  missing  0      no      no      b (exited)  /wt/b  removed
c     fleet/c  0        0      no      no      -           /wt/c  KEPT: 1 commit not merged
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestEventIsOneLineEitherWay(t *testing.T) {
	ev := events.Event{Subject: "w-1", Data: events.AgentReplied{Reply: "two\nlines"}}
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		if err := Event(&out, ev, asJSON); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
			t.Errorf("Event(json=%t) = %q, want one line", asJSON, got)
		}
	}
}

func TestSpawnedNamesTheWorktreeAndSandboxItHas(t *testing.T) {
	var out bytes.Buffer
	Spawned(&out, events.AgentRegistered{Agent: "w-1", Role: "w", EnvClass: "clean", Pane: "p1", Host: "h1", Sandbox: "bwrap",
		Worktree: events.Worktree{Path: "/wt/w-1", Branch: "fleet/w-1", Base: "main", Ahead: 1}}, false)
	want := "spawned w-1 (role w, clean) in pane p1 on host h1: starting\n" +
		"  worktree /wt/w-1 on branch fleet/w-1 (from main, 1 ahead)\n" +
		"  in sandbox bwrap\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTurnShowsItsStateTimelineAndReply(t *testing.T) {
	var out bytes.Buffer
	env := leadshim.Envelope{ID: "T1", Status: "replied", Agent: "w-1", Tokens: leadshim.Tokens{In: 3, Out: 4}, DurationMS: 1500, Reply: "done"}
	if err := Turn(&out, env, dashboard.Timeline{}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "turn T1: replied  agent=w-1 role=- model=- tokens=3/4 duration=1.5s\ndone\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReplyEndsInOneNewlineAndOnlyForARepliedTurn(t *testing.T) {
	for _, tc := range []struct {
		env  leadshim.Envelope
		want string
	}{
		{leadshim.Envelope{Status: "replied", Reply: "ok"}, "ok\n"},
		{leadshim.Envelope{Status: "replied", Reply: "ok\n"}, "ok\n"},
		{leadshim.Envelope{Status: "failed", Reply: "partial"}, ""},
	} {
		var out bytes.Buffer
		if err := Reply(&out, tc.env); err != nil || out.String() != tc.want {
			t.Errorf("Reply(%+v) = %q, %v; want %q", tc.env, out.String(), err, tc.want)
		}
	}
}

func TestHealthSaysWhyOnlyWhenDegraded(t *testing.T) {
	var out bytes.Buffer
	Health(&out, leadshim.Health{Status: "ok", Reasons: []string{"ignored"}})
	Health(&out, leadshim.Health{Status: "degraded", Reasons: []string{"w-1 is dead"}})
	if got, want := out.String(), "\nhealth: degraded\n  w-1 is dead\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPrintIsJSONOrTheTable(t *testing.T) {
	sessions := []projections.Session{{Name: "s1", Turns: 2}}
	var out bytes.Buffer
	if err := Sessions.Print(&out, sessions, time.Time{}, true); err != nil || !strings.HasPrefix(out.String(), "[\n  {\n    \"name\": \"s1\"") {
		t.Errorf("JSON: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := Sessions.Print(&out, sessions, time.Time{}, false); err != nil || !strings.HasPrefix(out.String(), "SESSION") {
		t.Errorf("table: %q, %v", out.String(), err)
	}
}
