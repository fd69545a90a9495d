package fakeapi

import "testing"

// A tool marker naming a Codex MCP tool whole ("mcp__fleetd__send") is
// answered in the namespace the request offered it in, as the real API
// answers a namespaced tool; any other name goes out as it is.
func TestResponsesNamespace(t *testing.T) {
	body := []byte(`{"tools":[
		{"type":"function","name":"exec_command"},
		{"type":"namespace","name":"mcp__fleetd","tools":[{"type":"function","name":"send"},{"type":"function","name":"inbox"}]}]}`)
	tests := []struct{ name, ns, tool string }{
		{"mcp__fleetd__send", "mcp__fleetd", "send"},
		{"mcp__fleetd__inbox", "mcp__fleetd", "inbox"},
		{"mcp__fleetd__nothing", "", "mcp__fleetd__nothing"}, // not in the namespace
		{"exec_command", "", "exec_command"},
		{"shell", "", "shell"},
	}
	for _, tt := range tests {
		if ns, tool := responsesNamespace(body, tt.name); ns != tt.ns || tool != tt.tool {
			t.Errorf("responsesNamespace(%q) = %q, %q; want %q, %q", tt.name, ns, tool, tt.ns, tt.tool)
		}
	}
	if ns, tool := responsesNamespace([]byte("not json"), "mcp__fleetd__send"); ns != "" || tool != "mcp__fleetd__send" {
		t.Errorf("an unreadable body: %q, %q", ns, tool)
	}
}
