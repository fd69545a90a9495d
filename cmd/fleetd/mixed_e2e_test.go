package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
)

// A mixed fleet: real Claude Code and real Codex agents in one fleet, one
// engine. A fan-out of role turns to both roles and turns by name, all at
// once, is answered by agents of the right kind, each turn typed once,
// and the roster and the envelopes name each agent's kind; an
// orchestrator plan hands a Codex task's rollup to a Claude Code task.
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

	// An orchestrator plan whose tasks go to both kinds: Codex drafts,
	// Claude Code reviews with the draft's rollup in its slice.
	plan := `{"plan":{"goal":"mixed","tasks":[{"id":"draft","to":"role:w-codex","instructions":"draft it"},` +
		`{"id":"review","to":"role:w-claude","instructions":"review it","needs":["draft"]}]},"from":"lead"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fleet.up.http+"/jobs", strings.NewReader(plan))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var job leadshim.JobAccepted
	err = json.NewDecoder(res.Body).Decode(&job)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /jobs: %d %v", res.StatusCode, err)
	}
	var state leadshim.JobState
	checkfor.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		res, err := http.Get(fleet.up.http + "/jobs/" + job.Job + "?wait=5s")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if err := json.NewDecoder(res.Body).Decode(&state); err != nil {
			return err
		}
		if state.Status != "ok" {
			return fmt.Errorf("job %s is %s: %+v", job.Job, state.Status, state)
		}
		return nil
	})
	for _, task := range state.Tasks {
		kind := agentNamed(t, fleet, ctx, task.Agent).Kind
		if want := map[string]string{"draft": "codex", "review": "claude"}[task.ID]; kind != want {
			t.Errorf("task %s ran on %s, a %s agent; want %s", task.ID, task.Agent, kind, want)
		}
	}
	if !strings.Contains(state.Rollup, "review it") || !strings.Contains(state.Rollup, "ECHO: draft it") {
		t.Errorf("the review's rollup %q does not carry the draft's", state.Rollup)
	}
}
