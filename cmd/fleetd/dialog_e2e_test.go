package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// A real Claude Code agent asked by the fake API to run a Bash command it
// needs permission for stops on its permission dialog: the roster shows
// the agent blocked with the dialog's question and options as its screen
// shows them, `fleetd answer` shows and answers it, and the answer lets the
// tool run and the turn reply. A second such turn answered No fails as
// denied, saying who said No to what, runs nothing, and leaves the agent
// able to take the next turn. An answer with no dialog up, or with an
// option the dialog does not have, is refused and types nothing. An agent
// of a role with deny_dialogs_after has its dialog answered No by that
// policy once it has waited that long.
func TestRealClaudePermissionDialogAnsweredRemotely(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work-d"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{
			"w-claude": claudeRole(claudeBin, baseURL, env, nil),
			"w-strict": claudeRole(claudeBin, baseURL, env, map[string]any{"deny_dialogs_after": "2s"}),
		}
	})
	fleet.spawn(ctx, "d-1", "w-claude", "work-d")
	fleet.spawn(ctx, "s-1", "w-strict", "work-d")
	fleet.waitReady(ctx, 90*time.Second, "d-1", "s-1")

	if out, err := fleet.cli(ctx, "answer", "d-1", "1"); err == nil || !strings.Contains(out, "no_dialog") {
		t.Errorf("an answer with no dialog up: %v\n%s", err, out)
	}
	// askOf sends agent a turn whose model runs `touch marker` and waits
	// for the dialog it opens; the turn's result comes on the channel.
	askOf := func(agent, marker string) (chan sendResult, *projections.Dialog) {
		t.Helper()
		text := fmt.Sprintf(`make it [tool=Bash:{"command":"touch %s","description":"make the marker"}]`, marker)
		done := make(chan sendResult, 1)
		go func() { done <- fleet.send(ctx, leadshim.Message{To: agent, Text: text, Timeout: "3m"}) }()
		var d *projections.Dialog
		checkfor.Eventually(t, time.Minute, 100*time.Millisecond, func() error {
			a := agentNamed(t, fleet, ctx, agent)
			if a.Dialog == nil {
				return fmt.Errorf("no dialog yet: status %s", a.Status)
			}
			d = a.Dialog
			return nil
		})
		return done, d
	}
	ask := func(marker string) (chan sendResult, *projections.Dialog) { return askOf("d-1", marker) }

	marker := filepath.Join(fleet.work("work-d"), "marker-yes")
	done, d := ask(marker)
	if d.Title != "Bash command" || d.Question != "Do you want to proceed?" || !strings.Contains(d.Detail, "touch "+marker) ||
		len(d.Options) < 2 || d.Options[0] != "Yes" || d.Options[len(d.Options)-1] != "No" {
		t.Errorf("the roster's dialog: %+v", d)
	}
	if out, err := fleet.cli(ctx, "answer", "d-1"); err != nil || !strings.Contains(out, "d-1 asks: Do you want to proceed?") || !strings.Contains(out, "1. Yes") {
		t.Errorf("fleetd answer d-1: %v\n%s", err, out)
	}
	if out, err := fleet.cli(ctx, "answer", "d-1", "9"); err == nil || !strings.Contains(out, "bad_option") {
		t.Errorf("option 9 of %d: %v\n%s", len(d.Options), err, out)
	}
	if out, err := fleet.cli(ctx, "answer", "d-1", "1", "--from", "ops"); err != nil || !strings.Contains(out, `answered 1. Yes to "Do you want to proceed?"`) {
		t.Fatalf("fleetd answer d-1 1: %v\n%s", err, out)
	}
	r := <-done
	if r.status != 200 || r.env.Status != string(lifecycle.StateReplied) || !strings.Contains(r.env.Reply, "TOOL_RESULT") {
		t.Errorf("the allowed turn: HTTP %d: %s", r.status, r.body)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if a := agentNamed(t, fleet, ctx, "d-1"); a.Dialog != nil {
		t.Errorf("the roster still shows the answered dialog: %+v", a.Dialog)
	}

	denied := filepath.Join(fleet.work("work-d"), "marker-no")
	done, d = ask(denied)
	no := len(d.Options)
	if out, err := fleet.cli(ctx, "answer", "d-1", fmt.Sprint(no)); err != nil || !strings.Contains(out, "answered "+fmt.Sprint(no)+". No") {
		t.Fatalf("fleetd answer d-1 %d: %v\n%s", no, err, out)
	}
	r = <-done
	if r.env.Status != string(lifecycle.StateFailed) || r.env.Reason != "denied" || !strings.Contains(r.env.Message, `lead answered "No" to "Do you want to proceed?"`) {
		t.Errorf("the denied turn: HTTP %d: %s", r.status, r.body)
	}
	if _, err := os.Stat(denied); err == nil {
		t.Errorf("the denied command ran")
	}
	if r := fleet.send(ctx, leadshim.Message{To: "d-1", Text: "canary after the denial", Timeout: "2m"}); r.status != 200 || r.env.Reply != "ECHO: canary after the denial" {
		t.Errorf("the turn after the denial: HTTP %d: %s", r.status, r.body)
	}

	// s-1's role denies a dialog left 2 s: the policy answers No.
	strict := filepath.Join(fleet.work("work-d"), "marker-strict")
	done, _ = askOf("s-1", strict)
	r = <-done
	if r.env.Status != string(lifecycle.StateFailed) || r.env.Reason != "denied" || !strings.Contains(r.env.Message, `policy answered "No"`) {
		t.Errorf("the turn of a role that denies unanswered dialogs: HTTP %d: %s", r.status, r.body)
	}
	if _, err := os.Stat(strict); err == nil {
		t.Errorf("the command the policy denied ran")
	}

	out, err := fleet.cli(ctx, "tail", "--agent", "d-1", "--since", "1h", "--no-follow")
	if err != nil || !strings.Contains(out, "answered 1 by ops") || !strings.Contains(out, "option 1 by ops") {
		t.Errorf("the log does not show who answered: %v\n%s", err, out)
	}
}
