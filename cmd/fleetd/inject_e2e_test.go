package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/roles"
)

// A spawn of a role whose agents run in the bubblewrap sandbox, with a
// model holding Ctrl-U and a command, ran that command on the host: the
// quotes around the typed model did not stop the pane's line editor. Now
// POST /agents and `fleetd mcp`'s spawn answer 400 before a pane is made,
// and the marker the command would write never appears; so does a cwd of
// / or /etc, where fleetd would have written /.fleet/.
func TestASpawnCannotSmuggleKeysOrAWorkingDirectoryPastTheDoor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway")
	}
	dir := t.TempDir()
	herdr := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	sim := []string{fleetdBin, "sim-agent", "--transcript-dir", filepath.Join(dir, "transcripts")}
	rc := roles.Config{Roles: map[string]roles.Role{
		"lead": {Tier: 0, EnvClass: roles.EnvClean, Inbox: true, MaySpawn: []string{"sb"}},
		"sb":   {Tier: 2, EnvClass: roles.EnvClean, Command: sim, Sandbox: "bwrap"},
	}}
	gw := startGateway(t, filepath.Join(dir, "data"), gateway.Config{Host: "injhost", HerdrPath: herdr.Path(), Roles: &rc})
	url := "http://" + gw.HTTPAddr()
	marker := filepath.Join(dir, "marker")
	hostile := "m1\u0015echo X > " + marker + " #"

	for _, tc := range []struct{ name, body, code string }{
		{"model with Ctrl-U", `{"role":"sb","name":"sb-1","from":"boss","from_role":"lead","model":"m1\u0015echo X > ` + marker + ` #"}`, "bad_model"},
		{"cwd /", `{"role":"sb","name":"sb-1","from":"boss","from_role":"lead","cwd":"/"}`, "bad_cwd"},
		{"cwd /etc", `{"role":"sb","name":"sb-1","from":"boss","from_role":"lead","cwd":"/etc"}`, "bad_cwd"},
	} {
		status, b := fleettest.Do(t, http.MethodPost, url+"/agents", tc.body)
		if status != http.StatusBadRequest || !strings.Contains(string(b), tc.code) {
			t.Errorf("POST /agents, %s: %d %s, want 400 %s", tc.name, status, b, tc.code)
		}
	}
	lead := mcpSession(t, "lead", url, "FLEET_ROLE=lead")
	if got := toolError(t, lead, "spawn", map[string]any{"role": "sb", "name": "sb-2", "model": hostile}); !strings.Contains(got, "bad_model") {
		t.Errorf("fleetd mcp's spawn with Ctrl-U in the model: %q, want bad_model", got)
	}
	if got := toolError(t, lead, "spawn", map[string]any{"role": "sb", "name": "sb-2", "cwd": "/etc"}); !strings.Contains(got, "bad_cwd") {
		t.Errorf("fleetd mcp's spawn in /etc: %q, want bad_cwd", got)
	}
	if n := herdr.Calls()["tab.create"] + herdr.Calls()["workspace.create"] + herdr.Calls()["pane.split"]; n != 0 {
		t.Errorf("%d panes made for refused spawns", n)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker exists (%v): the model's command ran on the host", err)
	}
	for _, d := range []string{"/.fleet", "/etc/.fleet"} {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("%s exists", d)
		}
	}
}
