package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/leadshim"
)

// A mixed fleet: real Claude Code and real Codex agents in one fleet, one
// engine. A fan-out of role turns to both roles and turns by name, all at
// once, is answered by agents of the right kind, each turn typed once,
// and the roster and the envelopes name each agent's kind.
func TestRealMixedFleetFanOut(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	codexBin := fakeapi.RequireCodex(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"c1", "c2", "x1", "x2"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{
			"w-claude": claudeRole(claudeBin, baseURL, env, nil),
			"w-codex":  codexRole(codexBin, baseURL, env, nil),
		}
	}, "--submit-timeout", "30s")
	spawns := []struct{ name, role, work string }{
		{"cl-1", "w-claude", "c1"}, {"cl-2", "w-claude", "c2"}, {"cx-1", "w-codex", "x1"}, {"cx-2", "w-codex", "x2"},
	}
	var wg sync.WaitGroup
	for _, s := range spawns {
		wg.Go(func() { fleet.spawn(ctx, s.name, s.role, s.work) })
	}
	wg.Wait()
	fleet.waitReady(ctx, 90*time.Second, "cl-1", "cl-2")
	for _, s := range spawns {
		want := map[string]string{"w-claude": "claude", "w-codex": "codex"}[s.role]
		if a := agentNamed(t, fleet, ctx, s.name); a.Kind != want {
			t.Errorf("%s's kind %q, want %s", s.name, a.Kind, want)
		}
	}

	type send struct{ to, text, kind string }
	var sends []send
	for i := range 4 {
		sends = append(sends, send{"role:w-claude", fmt.Sprintf("claude fan-out %d", i), "claude"},
			send{"role:w-codex", fmt.Sprintf("codex fan-out %d", i), "codex"})
	}
	for _, s := range spawns {
		sends = append(sends, send{s.name, "by name to " + s.name, map[string]string{"w-claude": "claude", "w-codex": "codex"}[s.role]})
	}
	results := make([]sendResult, len(sends))
	for i, s := range sends {
		wg.Go(func() { results[i] = fleet.send(ctx, leadshim.Message{To: s.to, Text: s.text, Timeout: "3m"}) })
	}
	wg.Wait()
	ids, prompts := map[string]bool{}, map[string]int{}
	for i, r := range results {
		s := sends[i]
		if r.status != http.StatusOK || r.env.Status != "replied" || r.env.Reply != "ECHO: "+s.text || r.env.Kind != s.kind {
			t.Errorf("%s %q: HTTP %d %s, want replied by a %s agent", s.to, s.text, r.status, r.body, s.kind)
			continue
		}
		ids[r.env.ID] = true
	}
	log, _ := connectLog(t, fleet.up.url)
	// A typing herdr refused (it wrote nothing: agent.prompt into a pane
	// whose agent herdr knows only from the hooks) is deferred and typed
	// again; every other typing reached the pane, and only one may.
	typed := map[string]int{}
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.>") {
		if !ids[ev.CorrelationID] {
			continue
		}
		switch d := ev.Data.(type) {
		case events.AgentTyped:
			if d.Enter == 0 {
				typed[ev.CorrelationID]++
			}
		case events.AgentDeferred:
			typed[ev.CorrelationID]--
		}
	}
	for id := range ids {
		if typed[id] != 1 {
			t.Errorf("turn %s reached its pane %d times, want once", id, typed[id])
		}
	}
	for _, req := range fleet.api.Requests() {
		for _, s := range sends {
			if req.Prompt == s.text {
				prompts[s.text]++
			}
		}
	}
	for _, s := range sends {
		if prompts[s.text] != 1 {
			t.Errorf("the model got %q %d times, want once", s.text, prompts[s.text])
		}
	}
}
