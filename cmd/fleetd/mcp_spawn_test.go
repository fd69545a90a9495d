package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/mcpserver"
	"github.com/fleetd/fleetd/roles"
)

// A lead outside fleetd, through the real `fleetd mcp`, spawns a worker
// into the gateway's herdr (a simulated Claude Code in a real PTY pane),
// is refused a role its own may not spawn and a name taken, and runs a
// plan over the worker to its rollup.
func TestMCPSpawnsIntoTheGatewaysHerdrAndOrchestratesThere(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a simulated agent in a real pane")
	}
	dir := t.TempDir()
	herdr := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	sim := []string{fleetdBin, "sim-agent", "--think", "100ms", "--transcript-dir", filepath.Join(dir, "transcripts")}
	paneEnv := map[string]string{"HERDR_AGENT": "claude", "FLEET_LOG_LEVEL": "warn"}
	rc := roles.Config{Roles: map[string]roles.Role{
		"lead": {Tier: 0, EnvClass: roles.EnvClean, Inbox: true, MaySpawn: []string{"w"}, Description: "the lead"},
		"main": {Tier: 1, EnvClass: roles.EnvClean, Inbox: true, Env: paneEnv, Command: sim, Description: "a main"},
		"w":    {Tier: 2, EnvClass: roles.EnvClean, Env: paneEnv, Command: sim, Description: "a worker"},
	}}
	gw := startGateway(t, filepath.Join(dir, "data"), gateway.Config{Host: "mcphost", HerdrPath: herdr.Path(), Roles: &rc})
	lead := mcpSession(t, "lead", "http://"+gw.HTTPAddr(), "FLEET_ROLE=lead")

	reg := callJSON[events.AgentRegistered](t, lead, "spawn", map[string]any{"role": "w", "name": "w-1"})
	if reg.Agent != "w-1" || reg.Host != "mcphost" || reg.Pane == "" || reg.Parent != "lead" {
		t.Fatalf("spawn = %+v, want w-1 in a pane of mcphost, working for lead", reg)
	}
	if a, ok := gw.Views.Agent("w-1"); !ok || a.Host != "mcphost" || a.SessionID == "" {
		t.Errorf("roster row of w-1 = %+v (%v), want it on mcphost with its session started", a, ok)
	}
	for args, want := range map[string]string{"main": "not_allowed", "w": "name_taken"} {
		name := map[string]string{"main": "main-1", "w": "w-1"}[args]
		if got := toolError(t, lead, "spawn", map[string]any{"role": args, "name": name}); !strings.Contains(got, want) {
			t.Errorf("spawn of %s %s: %q, want %s", args, name, got, want)
		}
	}

	plan := map[string]any{"goal": "two steps", "tasks": []any{
		map[string]any{"id": "design", "to": "w-1", "instructions": "design the thing"},
		map[string]any{"id": "build", "to": "role:w", "instructions": "build the thing", "needs": []string{"design"}},
	}}
	job := callJSON[mcpserver.JobResult](t, lead, "orchestrate", map[string]any{"plan": plan, "timeout": "50s"})
	if job.Status != "ok" || !strings.HasPrefix(job.Rollup, "SIM: build the thing") {
		t.Fatalf("orchestrate = %+v, want ok with the build task's reply", job)
	}
	for _, task := range job.Tasks {
		if task.State != "replied" || task.Agent != "w-1" {
			t.Errorf("task %+v, want replied by w-1", task)
		}
	}
	if st := callJSON[leadshim.JobState](t, lead, "orchestrate", map[string]any{"job": job.Job}); st.Status != "ok" || st.Rollup != job.Rollup {
		t.Errorf("the job read back = %+v", st)
	}
}

// toolError calls a tool that must fail and returns its error text.
func toolError(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	text, isError, err := callTool(cs, tool, args)
	if err != nil {
		return err.Error()
	}
	if !isError {
		t.Fatalf("%s(%v) succeeded: %s", tool, args, text)
	}
	return text
}

// A gateway that drives no herdr refuses spawns saying so, and a job that
// needs a session pane fails saying it cannot start one, without taking
// the gateway down.
func TestAGatewayWithoutHerdrRefusesSpawnsAndSessionPanes(t *testing.T) {
	dir := t.TempDir()
	rc := roles.Config{Roles: map[string]roles.Role{
		"lead": {EnvClass: roles.EnvClean, MaySpawn: []string{"main"}},
		"main": {EnvClass: roles.EnvClean, Tier: 1, Inbox: true},
	}}
	gw := startGateway(t, filepath.Join(dir, "data"), gateway.Config{Host: "noherdr", NoHerdr: true, Roles: &rc})
	lead := mcpSession(t, "lead", "http://"+gw.HTTPAddr(), "FLEET_ROLE=lead")

	if got := toolError(t, lead, "spawn", map[string]any{"role": "main", "name": "main-1"}); !strings.Contains(got, "no_herdr") {
		t.Errorf("spawn without herdr: %q, want no_herdr", got)
	}
	plan := map[string]any{"goal": "g", "tasks": []any{map[string]any{"id": "a", "to": "session:s1", "instructions": "x"}}}
	job := callJSON[mcpserver.JobResult](t, lead, "orchestrate", map[string]any{"plan": plan, "timeout": "30s"})
	if job.Status != "failed" || !strings.Contains(job.Error, "no spawner") {
		t.Errorf("a job needing a session pane without herdr = %+v, want failed for want of a spawner", job)
	}
	select {
	case <-gw.Done():
		t.Fatalf("the gateway stopped: %v", gw.Err())
	default:
	}
}

// startGateway runs a whole gateway in this process on dataDir: cfg with
// its HTTP and embedded NATS on free ports, the server named for the
// host, and warnings logged to stderr. It is closed when t ends.
func startGateway(t *testing.T, dataDir string, cfg gateway.Config) *gateway.Gateway {
	t.Helper()
	cfg.HTTP = "127.0.0.1:0"
	cfg.NATS = embeddednats.Config{DataDir: dataDir, ServerName: cfg.Host, Listen: "127.0.0.1:0"}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gw := gateway.New(cfg)
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	return gw
}
