package herdrapi

import (
	"encoding/json"
	"testing"
)

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Event
	}{
		{
			name: "lifecycle pane_created takes ids from the pane",
			line: `{"event":"pane_created","data":{"type":"pane_created","pane":{"pane_id":"w1:p2","terminal_id":"term_1","workspace_id":"w1","tab_id":"w1:t1","focused":false,"agent_status":"unknown","revision":0}}}`,
			want: Event{Kind: EventPaneCreated, Lifecycle: true, PaneID: "w1:p2", WorkspaceID: "w1", TabID: "w1:t1"},
		},
		{
			name: "lifecycle pane_agent_detected keeps the agent",
			line: `{"event":"pane_agent_detected","data":{"type":"pane_agent_detected","pane_id":"w1:p2","workspace_id":"w1","agent":"claude"}}`,
			want: Event{Kind: EventPaneAgentDetected, Lifecycle: true, PaneID: "w1:p2", WorkspaceID: "w1", Agent: "claude"},
		},
		{
			name: "lifecycle release carries the final status",
			line: `{"event":"pane_agent_detected","data":{"type":"pane_agent_detected","pane_id":"w1:p2","workspace_id":"w1","released":true,"final_status":"idle"}}`,
			want: Event{Kind: EventPaneAgentDetected, Lifecycle: true, PaneID: "w1:p2", WorkspaceID: "w1", Released: true, FinalStatus: StatusIdle},
		},
		{
			name: "lifecycle pane_exited",
			line: `{"event":"pane_exited","data":{"type":"pane_exited","pane_id":"w1:p2","workspace_id":"w1"}}`,
			want: Event{Kind: EventPaneExited, Lifecycle: true, PaneID: "w1:p2", WorkspaceID: "w1"},
		},
		{
			name: "lifecycle status change normalises to the dotted kind",
			line: `{"event":"pane_agent_status_changed","data":{"type":"pane_agent_status_changed","pane_id":"w1:p2","workspace_id":"w1","agent_status":"blocked","agent":"claude"}}`,
			want: Event{Kind: EventPaneAgentStatusChanged, Lifecycle: true, PaneID: "w1:p2", WorkspaceID: "w1", Agent: "claude", AgentStatus: StatusBlocked},
		},
		{
			name: "subscription status change is untagged and dotted",
			line: `{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p2","workspace_id":"w1","agent_status":"done","agent":"claude","title":"t"}}`,
			want: Event{Kind: EventPaneAgentStatusChanged, PaneID: "w1:p2", WorkspaceID: "w1", Agent: "claude", AgentStatus: StatusDone, Title: "t"},
		},
		{
			name: "subscription output match carries the read",
			line: `{"event":"pane.output_matched","data":{"pane_id":"w1:p2","matched_line":"DONE","read":{"pane_id":"w1:p2","workspace_id":"w1","tab_id":"w1:t1","source":"recent_unwrapped","format":"text","text":"x\nDONE","revision":0,"truncated":false}}}`,
			want: Event{Kind: EventPaneOutputMatched, PaneID: "w1:p2", WorkspaceID: "w1", TabID: "w1:t1", MatchedLine: "DONE"},
		},
		{
			name: "tab and layout events take ids from their payload",
			line: `{"event":"layout_updated","data":{"type":"layout_updated","layout":{"workspace_id":"w1","tab_id":"w1:t1","zoomed":false,"area":{"x":0,"y":0,"width":80,"height":24},"focused_pane_id":"w1:p1","panes":[],"splits":[]}}}`,
			want: Event{Kind: EventLayoutUpdated, Lifecycle: true, WorkspaceID: "w1", TabID: "w1:t1"},
		},
		{
			name: "unknown kinds still decode",
			line: `{"event":"worktree_opened","data":{"type":"worktree_opened"}}`,
			want: Event{Kind: "worktree.opened", Lifecycle: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeEvent([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Raw) != tt.line {
				t.Errorf("Raw = %s, want the line", got.Raw)
			}
			// Compare the scalar fields; payload pointers are checked below.
			g := got
			g.Raw, g.Pane, g.Tab, g.Workspace, g.Layout, g.Read = nil, nil, nil, nil, nil, nil
			if gj, wj := mustJSON(t, g), mustJSON(t, tt.want); gj != wj {
				t.Errorf("DecodeEvent =\n %s\nwant\n %s", gj, wj)
			}
		})
	}
	t.Run("payloads are decoded", func(t *testing.T) {
		got, err := DecodeEvent([]byte(tests[0].line))
		if err != nil || got.Pane == nil || got.Pane.TerminalID != "term_1" {
			t.Errorf("Pane = %+v, %v; want terminal term_1", got.Pane, err)
		}
		got, err = DecodeEvent([]byte(tests[6].line))
		if err != nil || got.Read == nil || got.Read.Text != "x\nDONE" {
			t.Errorf("Read = %+v, %v; want the read text", got.Read, err)
		}
	})
	for _, bad := range []string{`not json`, `{"data":{}}`, `{"event":"pane_created","data":"str"}`} {
		if _, err := DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("DecodeEvent(%s) succeeded, want an error", bad)
		}
	}
}

func TestSubscriptionOmitsUnusedFields(t *testing.T) {
	tests := []struct {
		sub  Subscription
		want string
	}{
		{Subscription{Type: EventPaneCreated}, `{"type":"pane.created"}`},
		{Subscription{Type: EventPaneAgentStatusChanged, PaneID: "w1:p1", AgentStatus: StatusDone}, `{"type":"pane.agent_status_changed","pane_id":"w1:p1","agent_status":"done"}`},
		{Subscription{Type: EventPaneOutputMatched, PaneID: "w1:p1", Source: SourceRecent, Match: &OutputMatch{"substring", "X"}, KeepANSI: true},
			`{"type":"pane.output_matched","pane_id":"w1:p1","source":"recent","match":{"type":"substring","value":"X"},"strip_ansi":false}`},
	}
	for _, tt := range tests {
		if got := mustJSON(t, tt.sub); got != tt.want {
			t.Errorf("marshal %+v = %s, want %s", tt.sub, got, tt.want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
