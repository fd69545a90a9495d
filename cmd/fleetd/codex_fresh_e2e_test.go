package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/leadshim"
)

// A fresh_context Codex role: before each prompt fleetd types Codex's
// /clear and sees a new chat's screen come back (Codex starts the new
// thread, and reports it, only with the next prompt), so each turn is the
// first of a new thread — the model's request for a later turn carries
// nothing of an earlier one, and the agent's session changes each turn.
func TestRealCodexFreshContextStartsEachTurnInANewChat(t *testing.T) {
	codexBin := fakeapi.RequireCodex(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-cx-fresh"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-codex-fresh": codexRole(codexBin, baseURL, env, map[string]any{"fresh_context": true})}
	}, "--submit-timeout", "30s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "cx-fresh", "w-codex-fresh", "work-cx-fresh")

	texts := []string{"fresh one: remember the word KUMQUAT", "fresh two: which word?", "fresh three: and now?"}
	var sessions []string
	for _, text := range texts {
		before := len(fleet.api.Requests())
		r := fleet.send(ctx, leadshim.Message{To: "cx-fresh", Text: text, Timeout: "2m"})
		if r.status != 200 || r.env.Status != "replied" || r.env.Reply != "ECHO: "+text {
			t.Fatalf("%q: HTTP %d %s", text, r.status, r.body)
		}
		if turn := fleet.turnFromLog(ctx, log, r.env.ID); !turn.Clear || turn.Delivery != "paste" {
			t.Errorf("%q: clear %v, delivery %q; want typed after a clear, as a paste", text, turn.Clear, turn.Delivery)
		}
		// The model got it once as a turn (Codex's title call quotes a
		// thread's first prompt; the fake answers it as auxiliary), and
		// no request for it carries an earlier turn.
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
		sessions = append(sessions, agentNamed(t, fleet, ctx, "cx-fresh").SessionID)
	}
	for i, s := range sessions {
		if s == "" || i > 0 && s == sessions[i-1] {
			t.Errorf("cx-fresh's sessions after each turn: %q, want a new one each turn", sessions)
			break
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
