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

// A fresh_context Gemini CLI role: before each prompt fleetd types /clear,
// hears the new session from its SessionStart hook (source "clear") and
// types the prompt only once Gemini has finished running its hooks (its
// "Executing Hook" row gone, the composer empty): a paste while it still
// ran them was lost whole. Each turn reaches the model once, in a request
// holding no earlier turn, and each is in a new session.
func TestRealGeminiFreshContextStartsEachTurnInANewSession(t *testing.T) {
	geminiBin := fakeapi.RequireGemini(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	started := time.Now()
	fleet := startClaudeFleet(t, []string{"work-gm-fresh"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-gemini-fresh": geminiRole(geminiBin, baseURL, env, map[string]any{"fresh_context": true})}
	}, "--submit-timeout", "30s")
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "gm-fresh", "w-gemini-fresh", "work-gm-fresh")

	texts := []string{"fresh one: remember the word KUMQUAT", "fresh two: which word?", "fresh three: and now?"}
	var sessions []string
	for _, text := range texts {
		before := len(fleet.api.Requests())
		r := fleet.send(ctx, leadshim.Message{To: "gm-fresh", Text: text, Timeout: "2m"})
		if r.status != 200 || r.env.Status != "replied" || r.env.Reply != "ECHO: "+text {
			t.Fatalf("%q: HTTP %d %s", text, r.status, r.body)
		}
		if turn := fleet.turnFromLog(ctx, log, r.env.ID); !turn.Clear || turn.Delivery != "paste" {
			t.Errorf("%q: clear %v, delivery %q; want typed after a clear, as a paste", text, turn.Clear, turn.Delivery)
		}
		// The model got it once as a turn (a side call quoting it is
		// answered as auxiliary), and no request for it carries an
		// earlier turn.
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
		sessions = append(sessions, agentNamed(t, fleet, ctx, "gm-fresh").SessionID)
	}
	for i, s := range sessions {
		if s == "" || i > 0 && s == sessions[i-1] {
			t.Errorf("gm-fresh's sessions after each turn: %q, want a new one each turn", sessions)
			break
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
