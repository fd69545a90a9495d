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
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// dialogKind is how one kind's agent is asked to run a shell command it
// needs permission for, and what its dialog says.
type dialogKind struct {
	agent, role string
	// dir is where its markers go: outside its work directory for a CLI
	// that asks only then (OpenCode); "" is the work directory.
	dir string
	// call is the fake API's marker for the kind's shell tool.
	call            func(command string) string
	title, question string
	// moves are the Right presses a person makes at the pane before the
	// Yes and before the No is answered, for a dialog whose keys move a
	// selection (OpenCode): the answer must choose what was asked.
	moves [2]int
}

// A real Claude Code, Gemini CLI, Codex and OpenCode agent, asked by the
// fake API to run a shell command they need permission for (Codex: one
// that asks to leave its sandbox; OpenCode: one outside its directory),
// stop on their permission
// dialogs: the roster shows each agent blocked with its dialog's question
// and options as its screen shows them, `fleetd answer` shows and answers
// it, and the answer lets the tool run and the turn reply. A second such
// turn answered No fails as denied, saying who said No to what, runs
// nothing, and leaves the agent able to take the next turn. An answer with
// no dialog up, or with an option the dialog does not have, is refused and
// types nothing. An agent of a role with deny_dialogs_after has its dialog
// answered No by that policy once it has waited that long.
func TestRealPermissionDialogsAnsweredRemotely(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	geminiBin := fakeapi.RequireGemini(t)
	codexBin := fakeapi.RequireCodex(t)
	openCodeBin := fakeapi.RequireOpenCode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	fleet := startClaudeFleet(t, []string{"work-d"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{
			"w-claude": claudeRole(claudeBin, baseURL, env, nil),
			"w-strict": claudeRole(claudeBin, baseURL, env, map[string]any{"deny_dialogs_after": "2s"}),
			"w-gemini": geminiRole(geminiBin, baseURL, env, nil),
			"w-codex":  codexRole(codexBin, baseURL, env, nil),
			"w-oc":     openCodeRole(openCodeBin, baseURL, env, nil),
		}
	})
	seedOpenCodeGlobalConfig(t, fleet.home)
	fleet.spawn(ctx, "d-1", "w-claude", "work-d")
	fleet.spawn(ctx, "s-1", "w-strict", "work-d")
	fleet.spawn(ctx, "g-1", "w-gemini", "work-d")
	fleet.spawn(ctx, "c-1", "w-codex", "work-d")
	fleet.spawn(ctx, "o-1", "w-oc", "work-d")
	fleet.waitReady(ctx, 2*time.Minute, "d-1", "s-1", "g-1")
	// Codex and OpenCode start their session with the first prompt:
	// their spawn returned once their box was drawn.

	claude := func(command string) string {
		return fmt.Sprintf(`[tool=Bash:{"command":"%s","description":"make the marker"}]`, command)
	}
	gemini := func(command string) string {
		return fmt.Sprintf(`[tool=run_shell_command:{"command":"%s","description":"make the marker"}]`, command)
	}
	codex := func(command string) string {
		return fmt.Sprintf(`[tool=exec_command:{"cmd":"%s","sandbox_permissions":"require_escalated","justification":"make the marker"}]`, command)
	}
	openCode := func(command string) string {
		return fmt.Sprintf(`[tool=bash:{"command":"%s","description":"make the marker"}]`, command)
	}
	// ask sends k's agent a turn whose model runs `touch marker` and waits
	// for the dialog it opens; the turn's result comes on the channel.
	ask := func(k dialogKind, marker string) (chan sendResult, *projections.Dialog) {
		t.Helper()
		done := make(chan sendResult, 1)
		go func() {
			done <- fleet.send(ctx, leadshim.Message{To: k.agent, Text: "make it " + k.call("touch "+marker), Timeout: "3m"})
		}()
		var d *projections.Dialog
		checkfor.Eventually(t, time.Minute, 100*time.Millisecond, func() error {
			a := agentNamed(t, fleet, ctx, k.agent)
			if a.Dialog == nil {
				return fmt.Errorf("no dialog yet: status %s", a.Status)
			}
			d = a.Dialog
			return nil
		})
		return done, d
	}

	for _, k := range []dialogKind{
		{agent: "d-1", role: "w-claude", call: claude, title: "Bash command", question: "Do you want to proceed?"},
		{agent: "g-1", role: "w-gemini", call: gemini, title: "Shell touch ", question: "Allow execution of [Shell]?"},
		{agent: "c-1", role: "w-codex", call: codex, question: "Would you like to run the following command?"},
		{agent: "o-1", role: "w-oc", call: openCode, dir: t.TempDir(), title: "Permission required", question: "Access external directory ", moves: [2]int{2, 1}},
	} {
		t.Run(k.role, func(t *testing.T) {
			if out, err := fleet.cli(ctx, "answer", k.agent, "1"); err == nil || !strings.Contains(out, "no_dialog") {
				t.Errorf("an answer with no dialog up: %v\n%s", err, out)
			}
			dir := k.dir
			if dir == "" {
				dir = fleet.work("work-d")
			}
			marker := filepath.Join(dir, k.agent+"-yes")
			done, d := ask(k, marker)
			if !strings.HasPrefix(d.Title, k.title) || !strings.HasPrefix(d.Question, k.question) || !strings.Contains(d.Question+"\n"+d.Detail, dir) ||
				len(d.Options) < 2 || !denies(d.Options[len(d.Options)-1]) {
				t.Errorf("the roster's dialog: %+v", d)
			}
			if out, err := fleet.cli(ctx, "answer", k.agent); err != nil || !strings.Contains(out, k.agent+" asks: "+k.question) || !strings.Contains(out, "1. "+d.Options[0]) {
				t.Errorf("fleetd answer %s: %v\n%s", k.agent, err, out)
			}
			if out, err := fleet.cli(ctx, "answer", k.agent, "9"); err == nil || !strings.Contains(out, "bad_option") {
				t.Errorf("option 9 of %d: %v\n%s", len(d.Options), err, out)
			}
			moveSelection(t, ctx, fleet, k.agent, k.moves[0])
			if out, err := fleet.cli(ctx, "answer", k.agent, "1", "--from", "ops"); err != nil || !strings.Contains(out, fmt.Sprintf("answered 1. %s to %q", d.Options[0], d.Question)) {
				t.Fatalf("fleetd answer %s 1: %v\n%s", k.agent, err, out)
			}
			r := <-done
			if r.status != 200 || r.env.Status != string(lifecycle.StateReplied) || !strings.Contains(r.env.Reply, "TOOL_RESULT") {
				t.Errorf("the allowed turn: HTTP %d: %s", r.status, r.body)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("the allowed command did not run: %v", err)
			}
			if a := agentNamed(t, fleet, ctx, k.agent); a.Dialog != nil {
				t.Errorf("the roster still shows the answered dialog: %+v", a.Dialog)
			}

			denied := filepath.Join(dir, k.agent+"-no")
			done, d = ask(k, denied)
			no := len(d.Options)
			moveSelection(t, ctx, fleet, k.agent, k.moves[1])
			if out, err := fleet.cli(ctx, "answer", k.agent, fmt.Sprint(no)); err != nil || !strings.Contains(out, fmt.Sprintf("answered %d. %s", no, d.Options[no-1])) {
				t.Fatalf("fleetd answer %s %d: %v\n%s", k.agent, no, err, out)
			}
			r = <-done
			if r.env.Status != string(lifecycle.StateFailed) || r.env.Reason != "denied" || !strings.Contains(r.env.Message, fmt.Sprintf("lead answered %q to %q", d.Options[no-1], d.Question)) {
				t.Errorf("the denied turn: HTTP %d: %s", r.status, r.body)
			}
			if _, err := os.Stat(denied); err == nil {
				t.Errorf("the denied command ran")
			}
			canary := "canary after the denial by " + k.agent
			if r := fleet.send(ctx, leadshim.Message{To: k.agent, Text: canary, Timeout: "2m"}); r.status != 200 || r.env.Reply != "ECHO: "+canary {
				t.Errorf("the turn after the denial: HTTP %d: %s", r.status, r.body)
			}
			out, err := fleet.cli(ctx, "tail", "--agent", k.agent, "--since", "1h", "--no-follow")
			if err != nil || !strings.Contains(out, "answered 1 by ops") || !strings.Contains(out, "option 1 by ops") {
				t.Errorf("the log does not show who answered: %v\n%s", err, out)
			}
		})
	}

	// s-1's role denies a dialog left 2 s: the policy answers No.
	strict := filepath.Join(fleet.work("work-d"), "s-1-strict")
	done, _ := ask(dialogKind{agent: "s-1", call: claude}, strict)
	r := <-done
	if r.env.Status != string(lifecycle.StateFailed) || r.env.Reason != "denied" || !strings.Contains(r.env.Message, `policy answered "No"`) {
		t.Errorf("the turn of a role that denies unanswered dialogs: HTTP %d: %s", r.status, r.body)
	}
	if _, err := os.Stat(strict); err == nil {
		t.Errorf("the command the policy denied ran")
	}
}

// moveSelection presses Right n times at agent's pane, as a person would,
// and waits until its OpenCode dialog shows the selection moved there.
func moveSelection(t *testing.T, ctx context.Context, fleet *claudeFleet, agent string, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	pane := agentNamed(t, fleet, ctx, agent).Pane
	hc := herdrapi.New(fleet.socket)
	for range n {
		if err := hc.SendKeys(ctx, pane, "right"); err != nil {
			t.Fatal(err)
		}
	}
	checkfor.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		r, err := hc.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return err
		}
		d, ok := herdrbridge.OpenCode{}.ParseDialog(r.Text)
		if !ok {
			return fmt.Errorf("no dialog on screen:\n%s", r.Text)
		}
		styled, err := hc.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible, Format: herdrapi.FormatANSI, KeepANSI: true})
		if err != nil {
			return err
		}
		if sel, ok := (herdrbridge.OpenCode{}).Selected(styled.Text, d); !ok || sel != n+1 {
			return fmt.Errorf("selected %d (%v), want %d", sel, ok, n+1)
		}
		return nil
	})
}

// denies reports an option that refuses what the dialog asks, as the
// gateway reads one.
func denies(label string) bool {
	l := strings.ToLower(label)
	for _, w := range []string{"no", "reject", "deny"} {
		if l == w || strings.HasPrefix(l, w+",") || strings.HasPrefix(l, w+" ") {
			return true
		}
	}
	return false
}
