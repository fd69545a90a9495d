package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/leadshim"
)

// A fresh_context OpenCode role: before each prompt fleetd types
// OpenCode's /new and sees its start screen come back, so each turn is
// the first prompt of a new session — the model's request for the second
// turn carries nothing of the first, and the agent's session changes
// from turn to turn.
func TestRealOpenCodeFreshContextStartsEachTurnInANewSession(t *testing.T) {
	openCodeBin := fakeapi.RequireOpenCode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-oc-fresh"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-opencode-fresh": openCodeRole(openCodeBin, baseURL, env, map[string]any{"fresh_context": true})}
	}, "--submit-timeout", "30s")
	seedOpenCodeGlobalConfig(t, fleet.home)
	log, _ := connectLog(t, fleet.up.url)
	// OpenCode draws its box in 6-8 s on an idle machine, over a minute
	// on a loaded one: the spawn waits up to 3.
	spawnCtx, spawnCancel := context.WithTimeout(ctx, 4*time.Minute)
	spawn := exec.CommandContext(spawnCtx, fleetdBin, "spawn", "--role", "w-opencode-fresh", "--name", "oc-fresh", "--cwd", fleet.work("work-oc-fresh"),
		"--wait", "3m", "--roles", fleet.rolesFile, "--herdr", fleet.herdr.Path(), "--data-dir", fleet.dataDir)
	spawn.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(),
		"FLEET_NATS_URL="+fleet.up.url, "FLEET_URL="+fleet.up.http, "FLEET_HOST=testhost", "FLEET_LOG_LEVEL=warn")
	out, err := spawn.CombinedOutput()
	spawnCancel()
	if err != nil {
		t.Fatalf("fleetd spawn oc-fresh: %v\n%s", err, out)
	}
	t.Logf("oc-fresh spawned after %v", time.Since(started).Round(time.Millisecond))

	texts := []string{"fresh one: remember the word KUMQUAT", "fresh two: which word?", "fresh three: and now?"}
	var sessions []string
	for _, text := range texts {
		before := len(fleet.api.Requests())
		r := fleet.send(ctx, leadshim.Message{To: "oc-fresh", Text: text, Timeout: "3m"})
		if r.status != 200 || r.env.Status != "replied" || r.env.Reply != "ECHO: "+text {
			t.Fatalf("%q: HTTP %d %s", text, r.status, r.body)
		}
		if turn := fleet.turnFromLog(ctx, log, r.env.ID); !turn.Clear || turn.Delivery != "paste" {
			t.Errorf("%q: clear %v, delivery %q; want typed after a clear, as a paste", text, turn.Clear, turn.Delivery)
		}
		// The model got it once as a turn (a new session's first prompt
		// also goes to OpenCode's title call, which the fake answers as
		// auxiliary), and no request for it carries an earlier turn.
		var turns int
		for _, req := range fleet.api.Requests()[before:] {
			if req.Prompt == text && req.Rule != "auxiliary" {
				turns++
			}
			if strings.HasPrefix(strings.TrimSpace(req.Prompt), "/") {
				t.Errorf("a command reached the model as a prompt: %q", req.Prompt)
			}
			if !strings.Contains(req.Prompt, text) {
				continue
			}
			for _, earlier := range texts {
				if earlier != text && bytes.Contains(req.Body, []byte(earlier)) {
					t.Errorf("the request for %q (%s) carries the earlier turn %q", text, req.Rule, earlier)
				}
			}
		}
		if turns != 1 {
			t.Errorf("the model got %q as a turn %d times, want 1", text, turns)
		}
		sessions = append(sessions, agentNamed(t, fleet, ctx, "oc-fresh").SessionID)
	}
	for i, s := range sessions {
		if !strings.HasPrefix(s, "ses_") || i > 0 && s == sessions[i-1] {
			t.Errorf("oc-fresh's sessions after each turn: %q, want a new ses_… each turn", sessions)
			break
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
