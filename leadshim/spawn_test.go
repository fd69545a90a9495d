package leadshim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// spawnerFunc is a Spawner of one function.
type spawnerFunc func(context.Context, leadshim.SpawnRequest) (events.AgentRegistered, error)

func (f spawnerFunc) Spawn(ctx context.Context, r leadshim.SpawnRequest) (events.AgentRegistered, error) {
	return f(ctx, r)
}

func TestSpawnAnswersSayWhyNot(t *testing.T) {
	f := fleettest.New(t)
	f.Register("lead-1", "lead")
	rc := roles.Config{Roles: map[string]roles.Role{"lead": {MaySpawn: []string{"w", "g", "wt"}}, "w": {}, "g": {},
		"wt": {Worktree: &roles.WorktreeSpec{Repo: "/r"}}}}
	tmp := t.TempDir()
	var asked []leadshim.SpawnRequest
	spawner := spawnerFunc(func(_ context.Context, r leadshim.SpawnRequest) (events.AgentRegistered, error) {
		asked = append(asked, r)
		switch r.Role {
		case "g":
			return events.AgentRegistered{}, fmt.Errorf("spawn %s refused: %w: role g must launch with ANTHROPIC_BASE_URL", r.Name, roles.ErrBoundary)
		case "w":
			if r.Name == "w-race" {
				return events.AgentRegistered{}, fmt.Errorf("%w: someone registered it meanwhile", leadshim.ErrAgentExists)
			}
			if r.Name == "w-bad-cwd" {
				return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w: cwd %q is the root directory", r.Name, roles.ErrCwd, "/")
			}
		}
		return events.AgentRegistered{Agent: r.Name, Host: "h1", Role: r.Role, Parent: r.Parent}, nil
	})
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Roles, c.Spawner = rc, spawner })
	_, noHerdr := newShim(t, f, func(c *leadshim.Config) { c.Roles = rc })
	for _, tc := range []struct {
		name, base, body string
		status           int
		code             string
	}{
		{"allowed", base, `{"role":"w","name":"w-1","from":"lead-1"}`, http.StatusCreated, `"parent":"lead-1"`},
		{"not allowed", base, `{"role":"lead","name":"lead-2","from":"lead-1"}`, http.StatusForbidden, "not_allowed"},
		{"unknown role", base, `{"role":"ghost","name":"g-1","from":"lead-1"}`, http.StatusNotFound, "unknown_role"},
		{"name taken", base, `{"role":"w","name":"lead-1","from":"lead-1"}`, http.StatusConflict, "name_taken"},
		{"name taken meanwhile", base, `{"role":"w","name":"w-race","from":"lead-1"}`, http.StatusConflict, "name_taken"},
		{"boundary", base, `{"role":"g","name":"g-1","from":"lead-1"}`, http.StatusForbidden, "boundary"},
		{"caller outside fleetd with its role", base, `{"role":"w","name":"w-2","from":"boss","from_role":"lead"}`, http.StatusCreated, `"agent":"w-2"`},
		{"caller outside fleetd without a role", base, `{"role":"w","name":"w-3","from":"boss"}`, http.StatusForbidden, "from_role"},
		{"caller of an unknown role", base, `{"role":"w","name":"w-3","from":"boss","from_role":"king"}`, http.StatusForbidden, "unknown role"},
		{"no caller", base, `{"role":"w","name":"w-3"}`, http.StatusBadRequest, "bad_from"},
		{"unknown field", base, `{"role":"w","name":"w-3","from":"lead-1","env":{"X":"1"}}`, http.StatusBadRequest, "env"},
		{"no herdr here", noHerdr, `{"role":"w","name":"w-4","from":"lead-1"}`, http.StatusServiceUnavailable, "no_herdr"},
		// A control character in a word of the launch is a key to the
		// pane's line editor (Ctrl-U ran the rest on the host).
		{"ctrl-u in the model", base, `{"role":"w","name":"w-5","from":"lead-1","model":"m1\u0015echo X > /tmp/marker #"}`, http.StatusBadRequest, "bad_model"},
		{"newline in the model", base, `{"role":"w","name":"w-5","from":"lead-1","model":"m1\necho X"}`, http.StatusBadRequest, "bad_model"},
		{"C1 in the model", base, `{"role":"w","name":"w-5","from":"lead-1","model":"m1\u009b"}`, http.StatusBadRequest, "bad_model"},
		// fleetd writes .fleet/ where the agent works: never / or /etc.
		{"cwd /", base, `{"role":"w","name":"w-5","from":"lead-1","cwd":"/"}`, http.StatusBadRequest, "bad_cwd"},
		{"cwd /etc", base, `{"role":"w","name":"w-5","from":"lead-1","cwd":"/etc"}`, http.StatusBadRequest, "bad_cwd"},
		{"cwd missing", base, `{"role":"w","name":"w-5","from":"lead-1","cwd":"/nonexistent/fleetd"}`, http.StatusBadRequest, "bad_cwd"},
		{"cwd relative", base, `{"role":"w","name":"w-5","from":"lead-1","cwd":"work"}`, http.StatusBadRequest, "bad_cwd"},
		{"cwd of a worktree role", base, `{"role":"wt","name":"w-5","from":"lead-1","cwd":"` + tmp + `"}`, http.StatusBadRequest, "bad_cwd"},
		{"cwd allowed", base, `{"role":"w","name":"w-6","from":"lead-1","cwd":"` + tmp + `"}`, http.StatusCreated, `"agent":"w-6"`},
		{"cwd refused by the bridge", base, `{"role":"w","name":"w-bad-cwd","from":"lead-1"}`, http.StatusBadRequest, "bad_cwd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := fleettest.Do(t, http.MethodPost, tc.base+"/agents", tc.body)
			if status != tc.status || !strings.Contains(string(b), tc.code) {
				t.Errorf("POST /agents %s = %d %s, want %d mentioning %s", tc.body, status, b, tc.status, tc.code)
			}
		})
	}
	// Only the requests that passed the shim's checks reached the spawner.
	var names []string
	for _, r := range asked {
		names = append(names, r.Name)
	}
	if got, want := strings.Join(names, " "), "w-1 w-race g-1 w-2 w-6 w-bad-cwd"; got != want {
		t.Errorf("spawner asked for %s, want %s", got, want)
	}
}
