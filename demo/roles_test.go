package demo

import (
	"slices"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// Each real CLI's role is one fleetd accepts, of its own kind, with the
// model naming and endpoint that CLI needs against the fake API (as the
// real-CLI tests of cmd/fleetd build theirs).
func TestRealRolesAreValidForEachCLI(t *testing.T) {
	const api = "http://127.0.0.1:9"
	want := map[string]struct{ model, baseURL, bin string }{
		KindClaude:   {"", api, "claude"},
		KindCodex:    {"fake-model", api + "/v1", "codex"},
		KindGemini:   {"gemini-2.5-flash", api, "gemini"},
		KindOpenCode: {"fleet/fake-model", api + "/v1", "opencode"},
		KindPi:       {"fake-model", api, "pi"},
	}
	for _, c := range agentCLIs {
		r := realRole(c.kind, api, "/home/demo")
		w := want[c.kind]
		if r.Kind != c.kind || r.Model != w.model || r.BaseURL != w.baseURL || r.Command[0] != w.bin || r.EnvClass != roles.EnvGateway || r.Env["HOME"] != "/home/demo" {
			t.Errorf("%s: got %+v, want kind %s, model %q, base URL %s, command %s, a gateway role at HOME /home/demo", c.kind, r, c.kind, w.model, w.baseURL, w.bin)
		}
		cfg := roles.Config{Roles: map[string]roles.Role{"w-" + c.kind: r}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.kind, err)
		}
	}
}

// One real CLI runs in two roles, w-<kind> and w-local; several run one
// role each; every role gets an agent even when fewer were asked for.
func TestRoleNamesAndAgentCount(t *testing.T) {
	for _, tt := range []struct {
		clis   []string
		agents int
		names  []string
		count  int
	}{
		{nil, 4, []string{"w-claude", "w-local"}, 4},
		{[]string{KindClaude}, 2, []string{"w-claude", "w-local"}, 2},
		{[]string{KindGemini}, 4, []string{"w-gemini", "w-local"}, 4},
		{[]string{KindClaude, KindOpenCode, KindPi}, 2, []string{"w-claude", "w-opencode", "w-pi"}, 3},
		{[]string{KindClaude, KindCodex}, 6, []string{"w-claude", "w-codex"}, 6},
	} {
		d := &run{opts: Options{Agents: tt.agents}, clis: tt.clis, roleNames: roleNames(tt.clis)}
		if !slices.Equal(d.roleNames, tt.names) || d.agentCount() != tt.count {
			t.Errorf("%v with %d agents: roles %v and %d agents, want %v and %d", tt.clis, tt.agents, d.roleNames, d.agentCount(), tt.names, tt.count)
		}
	}
}
