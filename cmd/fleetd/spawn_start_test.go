package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
)

// Tried as a new user would, on a machine without `claude` on the PATH:
// `fleetd spawn` fails at once with what the pane shows and leaves no
// pane behind, the roster says the agent failed to start and why, and a
// send to it is refused up front with that reason instead of timing out.
// With --no-wait the spawn returns at once and the gateway finds out the
// same.
func TestSpawnOfAnAgentThatCannotStartSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work-1"}, func(string, map[string]string) map[string]any {
		return map[string]any{"w-claude": map[string]any{"command": []string{"claude-is-not-installed-here", "--settings", "{settings}"}}}
	})
	out, err := fleet.cli(ctx, "spawn", "--role", "w-claude", "--name", "w-claude-1", "--cwd", fleet.work("work-1"),
		"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir, "--wait", "30s")
	if err == nil || !strings.Contains(out, "did not start") || !strings.Contains(out, "not found") {
		t.Fatalf("fleetd spawn of a missing command: %v\n%s\nwant a failure quoting the pane's 'not found'", err, out)
	}
	waitFailed := func(agent string) string {
		var why string
		checkfor.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
			roster, err := fleet.roster(ctx)
			if err != nil {
				return err
			}
			a, ok := findAgent(roster, agent)
			if why = a.FailedToStart; !ok || !strings.Contains(why, "not found") || a.Starting || a.Ready() {
				return fmt.Errorf("%s: %+v, want failed to start because the command was not found", agent, a)
			}
			return nil
		})
		return why
	}
	waitFailed("w-claude-1")
	r := fleet.send(ctx, leadshim.Message{To: "w-claude-1", Text: "hello", Timeout: "1m"})
	if r.status != http.StatusConflict || !strings.Contains(string(r.body), "failed_to_start") || !strings.Contains(string(r.body), "not found") {
		t.Errorf("send to it: HTTP %d %s, want 409 failed_to_start with the reason", r.status, r.body)
	}

	// --no-wait: spawned "starting"; the gateway sees the command exit.
	out, err = fleet.cli(ctx, "spawn", "--role", "w-claude", "--name", "w-claude-2", "--cwd", fleet.work("work-1"),
		"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir, "--no-wait")
	if err != nil || !strings.Contains(out, "starting") {
		t.Fatalf("fleetd spawn --no-wait: %v\n%s", err, out)
	}
	waitFailed("w-claude-2")
	if r := fleet.send(ctx, leadshim.Message{To: "w-claude-2", Text: "hello", Timeout: "1m"}); r.status != http.StatusConflict || !strings.Contains(string(r.body), "failed_to_start") {
		t.Errorf("send to the --no-wait agent: HTTP %d %s, want 409 failed_to_start", r.status, r.body)
	}
}

// A restart storm through fleetd up: a role whose command exits at once,
// restarted on failure with a short backoff, is restarted restart_max
// times, each after twice the wait of the one before, and then left alone:
// the roster counts the restarts and says it needs attention.
func TestARestartStormStopsAtTheCapWithNeedsAttention(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work-1"}, func(string, map[string]string) map[string]any {
		return map[string]any{"w-crash": map[string]any{"command": []string{"sh", "-c", "echo crashing; exit 3"},
			"restart": "on-failure", "restart_max": 3, "restart_backoff": "100ms"}}
	})
	out, err := fleet.cli(ctx, "spawn", "--role", "w-crash", "--name", "w-1", "--cwd", fleet.work("work-1"),
		"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir, "--no-wait")
	if err != nil {
		t.Fatalf("fleetd spawn: %v\n%s", err, out)
	}
	checkfor.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if a, _ := findAgent(roster, "w-1"); a.NeedsAttention != "restart_limit" || a.Restarts != 3 || a.Restarting {
			return fmt.Errorf("w-1: %+v, want 3 restarts and needs_attention restart_limit", a)
		}
		return nil
	})
	log, _ := connectLog(t, fleet.up.url)
	var steps []string
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.w-1.restart") {
		d := ev.Data.(events.AgentRestart)
		steps = append(steps, fmt.Sprintf("%s#%d/%v", d.State, d.Attempt, d.Delay))
	}
	want := "[restarting#1/100ms restarted#1/0s restarting#2/200ms restarted#2/0s restarting#3/400ms restarted#3/0s gave_up#3/0s]"
	if got := fmt.Sprint(steps); got != want {
		t.Errorf("restart steps %s\nwant %s", got, want)
	}
}
