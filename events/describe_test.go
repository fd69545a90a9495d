package events_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
)

func TestDescribeSaysWhatAnEventSays(t *testing.T) {
	at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	tests := []struct {
		ev   events.Event
		want []string
	}{
		{events.Event{Subject: "w-1", Seq: 42, Time: at, CorrelationID: "T1", Data: events.AgentQueued{From: "lead", Text: "fix\nthe tests"}},
			[]string{"#42", "agent", "w-1", "queued", "turn=T1", "from=lead", `"fix the tests"`}},
		{events.Event{Subject: "w-1", Time: at, Data: events.AgentQueued{From: "lead", Command: "/clear"}}, []string{"command /clear"}},
		{events.Event{Subject: "w-1", Time: at, CorrelationID: "T1", Data: events.AgentTyped{Pane: "w1:p1", Method: "agent.prompt", Delivery: "file"}},
			[]string{"pane=w1:p1", "via agent.prompt", "as file"}},
		{events.Event{Subject: "w-1", Time: at, CorrelationID: "T1", Data: events.AgentDeferred{Reason: "agent_not_ready", Message: "not foreground"}},
			[]string{"deferred", "agent_not_ready: not foreground"}},
		{events.Event{Subject: "w-1", Time: at, Data: events.AgentAttention{Reason: "shell", Detail: "the pane shows a shell"}}, []string{"attention", "shell: the pane shows a shell"}},
		{events.Event{Subject: "w-1", Time: at, Data: events.AgentAttention{}}, []string{"attention", "cleared"}},
		{events.Event{Subject: "w-1", Time: at, Data: events.AgentRegistered{Agent: "w-1", Worktree: events.Worktree{Path: "/wt/w-1", Branch: "fleet/w-1"}, Sandbox: "bwrap"}},
			[]string{"worktree=/wt/w-1 branch=fleet/w-1", "sandbox=bwrap"}},
		{events.Event{Subject: "w-1", Time: at, CorrelationID: "T1", Data: events.AgentReplied{Reply: "ok", Worktree: events.Worktree{Branch: "fleet/w-1", Head: "0123456789ab", Ahead: 2, Dirty: 1}}},
			[]string{"fleet/w-1@01234567 ahead=2 dirty=1"}},
		{events.Event{Subject: "w-1", Time: at, Data: events.AgentExited{Reason: "pane_exited", Worktree: events.Worktree{Path: "/wt/w-1", Kept: "1 uncommitted file"}}},
			[]string{"worktree /wt/w-1 KEPT: 1 uncommitted file"}},
		{events.Event{Subject: "w-1", Time: at, Data: events.AgentExited{Reason: "pane_exited", Worktree: events.Worktree{Path: "/wt/w-1", Removed: true}}},
			[]string{"worktree /wt/w-1 removed"}},
	}
	for _, tt := range tests {
		got := events.Describe(tt.ev)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Describe = %q, missing %q", got, w)
			}
		}
	}
}
