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

// mixedKind is one agent kind of the mixed fleet: its role, its two
// agents and how its role is built against the fake API.
type mixedKind struct {
	kind, role string
	agents     [2]string
	build      func(baseURL string, env map[string]string) map[string]any
}

// A mixed fleet: real Claude Code, Codex, Gemini CLI and Pi agents, two
// of each, in one fleet, one engine. Sixteen turns at once — a fan-out of
// two role turns per kind and one turn by name to each agent — are each
// answered by an agent of the right kind, each typed once and reaching
// the model once, and the roster and the envelopes name each agent's
// kind. An orchestrator plan spans the four kinds: a Codex draft, a
// Gemini review and a Pi check of it at once, then a Claude Code
// summary with both in its slice. Eight CLIs starting at once on a
// two-core machine take their time: nothing here waits on a fixed delay,
// only on what the fleet reports, within generous limits.
func TestRealMixedFleetFanOut(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	codexBin := fakeapi.RequireCodex(t)
	geminiBin := fakeapi.RequireGemini(t)
	piBin := fakeapi.RequirePi(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	started := time.Now()
	kinds := []mixedKind{
		{"claude", "w-claude", [2]string{"cl-1", "cl-2"}, func(u string, e map[string]string) map[string]any { return claudeRole(claudeBin, u, e, nil) }},
		{"codex", "w-codex", [2]string{"cx-1", "cx-2"}, func(u string, e map[string]string) map[string]any { return codexRole(codexBin, u, e, nil) }},
		{"gemini", "w-gemini", [2]string{"gm-1", "gm-2"}, func(u string, e map[string]string) map[string]any { return geminiRole(geminiBin, u, e, nil) }},
		{"pi", "w-pi", [2]string{"pi-1", "pi-2"}, func(u string, e map[string]string) map[string]any { return piRole(piBin, u, e, nil) }},
	}
	kindOf := map[string]string{} // agent → kind
	var works []string
	for _, k := range kinds {
		for _, a := range k.agents {
			kindOf[a] = k.kind
			works = append(works, "work-"+a)
		}
	}
	fleet := startClaudeFleet(t, works, func(baseURL string, env map[string]string) map[string]any {
		roles := map[string]any{}
		for _, k := range kinds {
			roles[k.role] = k.build(baseURL, env)
		}
		return roles
	}, "--submit-timeout", "30s")

	// All eight at once, each spawn returning once its command is typed
	// (a waiting spawn's 60 s would not cover eight CLIs starting on two
	// cores); the roster then says when each is up.
	var wg sync.WaitGroup
	for _, k := range kinds {
		for _, name := range k.agents {
			wg.Go(func() {
				out, err := fleet.cli(ctx, "spawn", "--role", k.role, "--name", name, "--cwd", fleet.work("work-"+name), "--no-wait",
					"--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
				if err != nil {
					t.Errorf("fleetd spawn %s: %v\n%s", name, err, out)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Ready: session started and idle. Codex reports its session only
	// with its first prompt (its SessionStart hook runs then), so a Codex
	// agent counts once it is up and idle; its turns wait for its box.
	checkfor.Eventually(t, 6*time.Minute, 250*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		var waiting []string
		for _, k := range kinds {
			for _, name := range k.agents {
				a, ok := findAgent(roster, name)
				if !ok || !a.Ready() || (k.kind != "codex" && a.SessionID == "") {
					waiting = append(waiting, fmt.Sprintf("%s (%s %q)", name, a.Status, a.NeedsAttention))
				}
			}
		}
		if len(waiting) > 0 {
			return fmt.Errorf("not ready yet: %v", waiting)
		}
		return nil
	})
	t.Logf("8 agents of 4 kinds ready after %v", time.Since(started).Round(time.Millisecond))
	// The roster names each agent's kind, in the API and in `fleetd
	// roster` (AGENT HOST ROLE KIND ...).
	roster, err := fleet.roster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fleet.cli(ctx, "roster")
	if err != nil {
		t.Fatalf("fleetd roster: %v\n%s", err, out)
	}
	listed := map[string]string{}
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 3 {
			listed[f[0]] = f[3]
		}
	}
	for name, want := range kindOf {
		if a, _ := findAgent(roster, name); a.Kind != want {
			t.Errorf("%s's kind on the roster: %q, want %s", name, a.Kind, want)
		}
		if listed[name] != want {
			t.Errorf("fleetd roster lists %s as %q, want %s:\n%s", name, listed[name], want, out)
		}
	}

	type send struct{ to, text, kind string }
	var sends []send
	for _, k := range kinds {
		for i := range 2 {
			sends = append(sends, send{"role:" + k.role, fmt.Sprintf("%s fan-out %d", k.kind, i), k.kind})
		}
		for _, name := range k.agents {
			sends = append(sends, send{name, "by name to " + name, k.kind})
		}
	}
	fanOut := time.Now()
	results := make([]sendResult, len(sends))
	for i, s := range sends {
		wg.Go(func() { results[i] = fleet.send(ctx, leadshim.Message{To: s.to, Text: s.text, Timeout: "8m"}) })
	}
	wg.Wait()
	t.Logf("%d turns at once answered after %v", len(sends), time.Since(fanOut).Round(time.Millisecond))
	ids, prompts := map[string]bool{}, map[string]int{}
	for i, r := range results {
		s := sends[i]
		if r.status != http.StatusOK || r.env.Status != "replied" || r.env.Reply != "ECHO: "+s.text || r.env.Kind != s.kind || kindOf[r.env.Agent] != s.kind {
			t.Errorf("%s %q: HTTP %d %s, want replied by a %s agent", s.to, s.text, r.status, r.body, s.kind)
			continue
		}
		if !strings.HasPrefix(s.to, "role:") && r.env.Agent != s.to {
			t.Errorf("%q was answered by %s, want %s", s.text, r.env.Agent, s.to)
		}
		ids[r.env.ID] = true
	}
	// How long each turn took, by kind, and how often a CLI took the
	// Enter after a paste for a newline so fleetd pressed it once more
	// (after the submit timeout): said, not failed, as it depends on the
	// machine's load.
	slowest := map[string]time.Duration{}
	for i, r := range results {
		if d := time.Duration(r.env.DurationMS) * time.Millisecond; d > slowest[sends[i].kind] {
			slowest[sends[i].kind] = d
		}
	}
	log, _ := connectLog(t, fleet.up.url)
	enters := map[string]int{}
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.>") {
		if d, ok := ev.Data.(events.AgentTyped); ok && d.Enter > 0 && ids[ev.CorrelationID] {
			enters[kindOf[ev.Subject]]++
		}
	}
	t.Logf("slowest turn by kind: %v; Enter pressed once more by kind: %v", slowest, enters)
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
	// A side call (a title, a routing check) may quote the prompt; the
	// fake answers those as auxiliary, and only turns count.
	for _, req := range fleet.api.Requests() {
		for _, s := range sends {
			if req.Prompt == s.text && req.Rule != "auxiliary" {
				prompts[s.text]++
			}
		}
	}
	for _, s := range sends {
		if prompts[s.text] != 1 {
			t.Errorf("the model got %q %d times, want once", s.text, prompts[s.text])
		}
	}

	// An orchestrator plan across the four kinds: Codex drafts; Gemini
	// reviews and Pi checks the draft at once, each with its rollup in
	// the slice; Claude Code sums up with both rollups in its slice, so
	// the job's rollup carries every task's reply.
	plan := `{"plan":{"goal":"mixed","tasks":[{"id":"draft","to":"role:w-codex","instructions":"draft it"},` +
		`{"id":"review","to":"role:w-gemini","instructions":"review it","needs":["draft"]},` +
		`{"id":"check","to":"role:w-pi","instructions":"check it","needs":["draft"]},` +
		`{"id":"sum","to":"role:w-claude","instructions":"sum it up","needs":["review","check"]}]},"from":"lead"}`
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
	planned := time.Now()
	var state leadshim.JobState
	checkfor.Eventually(t, 5*time.Minute, 200*time.Millisecond, func() error {
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
	t.Logf("the four-kind plan done after %v", time.Since(planned).Round(time.Millisecond))
	want := map[string]string{"draft": "codex", "review": "gemini", "check": "pi", "sum": "claude"}
	if len(state.Tasks) != len(want) {
		t.Errorf("the job has %d tasks, want %d: %+v", len(state.Tasks), len(want), state.Tasks)
	}
	for _, task := range state.Tasks {
		if kind := agentNamed(t, fleet, ctx, task.Agent).Kind; kind != want[task.ID] {
			t.Errorf("task %s ran on %s, a %s agent; want %s", task.ID, task.Agent, kind, want[task.ID])
		}
	}
	for _, r := range []string{"ECHO: sum it up", "ECHO: review it", "ECHO: check it", "ECHO: draft it"} {
		if !strings.Contains(state.Rollup, r) {
			t.Errorf("the job's rollup does not carry %q:\n%s", r, state.Rollup)
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
