package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// A simulated Claude Code worker is killed (-9) while idle, and a role
// turn comes at once, before its death is noticed, as does a turn sent to
// it by name (queued through its restart). Its role restarts it in a new
// pane; from then on it takes turns by name like any live agent: whatever
// its dead pane showed (its shell) is not its new session's attention.
// The sequence failed with 409 needs_attention (shell), for good.
func TestAKilledSimAgentIsReadyAtOnceAfterItsRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleetd up")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work-1", "work-2"}, func(string, map[string]string) map[string]any {
		return map[string]any{"w-sim": map[string]any{"command": []string{fleetdBin, "sim-agent", "--think", "100ms"},
			"restart": "on-failure", "restart_backoff": "200ms"}}
	})
	fleet.spawn(ctx, "w-1", "w-sim", "work-1")
	fleet.spawn(ctx, "w-2", "w-sim", "work-2")
	fleet.waitReady(ctx, 60*time.Second, "w-1", "w-2")
	before := agentNamed(t, fleet, ctx, "w-1")

	fleet.killClaude(t, before.Pane)
	var wg sync.WaitGroup
	var role, queued sendResult
	wg.Go(func() {
		role = fleet.send(ctx, leadshim.Message{To: "role:w-sim", Text: "any worker, right after the kill", Timeout: "90s"})
	})
	yes := true
	wg.Go(func() {
		queued = fleet.send(ctx, leadshim.Message{To: "w-1", Text: "w-1, once it is back", Timeout: "90s", Queue: &yes})
	})

	var after projections.Agent
	checkfor.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		after = agentNamed(t, fleet, ctx, "w-1")
		if after.Restarts != 1 || after.Pane == before.Pane || !after.Ready() {
			return fmt.Errorf("w-1 not ready after its restart: %+v", after)
		}
		return nil
	})
	if after.NeedsAttention != "" {
		t.Errorf("w-1 after its restart needs attention: %s (%s)", after.NeedsAttention, after.AttentionDetail)
	}
	for i := range 3 {
		text := fmt.Sprintf("by name after the restart, %d", i)
		if r := fleet.send(ctx, leadshim.Message{To: "w-1", Text: text, Timeout: "90s"}); r.status != http.StatusOK || r.env.Status != "replied" {
			t.Fatalf("%q: HTTP %d %s, want replied", text, r.status, r.body)
		}
	}
	wg.Wait()
	if role.status != http.StatusOK || role.env.Status != "replied" {
		t.Errorf("the role turn sent at the kill: HTTP %d %s, want replied", role.status, role.body)
	}
	if queued.status != http.StatusOK || queued.env.Status != "replied" || queued.env.Agent != "w-1" {
		t.Errorf("the turn queued for w-1 at the kill: HTTP %d %s, want replied by w-1", queued.status, queued.body)
	}
}

// agentNamed is the roster's row of name; it fails t when there is none.
func agentNamed(t *testing.T, fleet *claudeFleet, ctx context.Context, name string) projections.Agent {
	t.Helper()
	roster, err := fleet.roster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := findAgent(roster, name)
	if !ok {
		t.Fatalf("%s is not on the roster", name)
	}
	return a
}
