package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/herdrbridge/recording"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// TestRecordClaude records Claude Code's standard scenarios through one
// fleet and one agent, w-1: start → ready; a one-line turn; a multi-line
// paste; a mode character ("!" first); a dialog (/help) a person opens
// while a turn waits, and closes; a permission prompt (the agent
// blocked, then allowed); the process killed (its role restarts it);
// the resumed session's turn. See recordMode.
func TestRecordClaude(t *testing.T) {
	requireRecordMode(t)
	claudeBin := fakeapi.RequireClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	dir := t.TempDir()
	work := filepath.Join(dir, "work-1")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newClaudeFleet(t, dir, []string{work}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-local": claudeRole(claudeBin, baseURL, env, map[string]any{
			"restart":         "on-failure",
			"restart_backoff": "200ms",
		})}
	})
	f.herdr = herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t), Env: claudePaneEnv(), Cols: 120, Rows: 40})
	proxy, err := recording.Interpose(f.herdr.Path())
	if err != nil {
		t.Fatal(err)
	}
	f.socket, f.runtime = f.herdr.Path(), []string{"--herdr", f.herdr.Path()}
	f.up = startUp(t, f.dataDir, "--herdr", f.herdr.Path(), "--roles", f.rolesFile, "--heartbeat", "1s", "--submit-timeout", "30s")
	t.Cleanup(func() {
		f.herdr.Close()
		proxy.Close()
		waitGone(t, dir, 20*time.Second)
	})
	t.Cleanup(f.dumpOnFailure)
	log, _ := connectLog(t, f.up.url)
	ping, err := herdrapi.New(proxy.Upstream()).Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{
		t: t, kind: herdrbridge.Claude{}, agent: "w-1", proxy: proxy, log: log,
		versions: recording.Versions{
			CLI:     strings.TrimSuffix(cliVersion(t, claudeBin), " (Claude Code)"),
			Runtime: fmt.Sprintf("herdrtest %s (protocol %d)", ping.Version, ping.Protocol),
		},
		scrub:  &recording.Scrubber{Literals: map[string]string{work: "$WORK", f.home: "$HOME", dir: "$DIR", f.api.URL(): "$API"}},
		person: herdrapi.New(proxy.Upstream()),
	}
	roster := f.roster
	turn := func(text string) leadshim.Envelope {
		t.Helper()
		res := f.send(ctx, leadshim.Message{To: "w-1", Text: text, Timeout: "2m"})
		if res.err != nil || res.status != http.StatusOK || res.env.Status != "replied" {
			t.Fatalf("turn %q: HTTP %d %v %s", text, res.status, res.err, res.body)
		}
		return res.env
	}
	// settle waits for the agent to be idle again after a turn, the
	// screen with it, so a scenario ends where the next begins.
	settle := func() projections.Agent {
		t.Helper()
		a := agentRow(t, roster, ctx, "w-1", 30*time.Second, "ready", func(a projections.Agent) bool { return a.Ready() && a.CurrentTurn == "" })
		r.screenReady(ctx, a.Pane)
		return a
	}

	r.begin("start")
	f.spawn(ctx, "w-1", "w-local", "work-1")
	first := agentRow(t, roster, ctx, "w-1", 90*time.Second, "ready", func(a projections.Agent) bool { return a.SessionID != "" && !a.Starting && a.Ready() })
	r.screenReady(ctx, first.Pane)
	r.look(ctx, first.Pane, "started")
	r.end(ctx, "start")

	r.begin("one-line-turn")
	turn("alpha: remember the word kumquat")
	settle()
	r.end(ctx, "one-line-turn")

	r.begin("multi-line-paste")
	turn("bravo: a text over\nfour lines,\nwhich Claude Code would fold\ninto a placeholder pasted whole")
	settle()
	r.end(ctx, "multi-line-paste")

	r.begin("mode-character")
	turn("!charlie: starts with a bang, which must not switch to bash mode")
	settle()
	r.end(ctx, "mode-character")

	// A person opens /help while a turn waits: no prompt box, the turn
	// waits (and the agent needs attention after 10 s), the person
	// closes it with Escape, and the turn is typed.
	r.begin("dialog")
	r.note(first.Pane, "person types /help and Enter")
	if err := r.person.SendInput(ctx, first.Pane, "/help"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := r.person.SendKeys(ctx, first.Pane, "enter"); err != nil {
		t.Fatal(err)
	}
	done := make(chan leadshim.Envelope, 1)
	go func() { done <- turn("delta: sent while the help was open") }()
	agentRow(t, roster, ctx, "w-1", 40*time.Second, "in need of attention", func(a projections.Agent) bool {
		return a.NeedsAttention == herdrbridge.AttentionNoPromptBox
	})
	r.note(first.Pane, "person presses Escape")
	if err := r.person.SendKeys(ctx, first.Pane, "escape"); err != nil {
		t.Fatal(err)
	}
	<-done
	settle()
	r.end(ctx, "dialog")

	// A tool the model asks for needs permission: the agent shows
	// blocked until the person allows it (Enter on "Yes").
	r.begin("permission")
	done = make(chan leadshim.Envelope, 1)
	go func() { done <- turn("echo: touch a file [tool=Bash:touch permission-test.txt]") }()
	agentRow(t, roster, ctx, "w-1", 60*time.Second, "blocked", func(a projections.Agent) bool { return a.Status == events.StatusBlocked })
	r.look(ctx, first.Pane, "blocked")
	r.note(first.Pane, "person presses Enter (allow)")
	if err := r.person.SendKeys(ctx, first.Pane, "enter"); err != nil {
		t.Fatal(err)
	}
	<-done
	settle()
	r.end(ctx, "permission")

	// Killed while idle, once its conversation is on disk: its role
	// restarts it in a new pane, resuming its session.
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		files, _ := filepath.Glob(filepath.Join(f.home, ".claude", "projects", "*", first.SessionID+".jsonl"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("kumquat")) {
				return nil
			}
		}
		return fmt.Errorf("the conversation is not on disk yet")
	})
	r.begin("killed")
	r.note(first.Pane, "kill -9 the agent's processes")
	f.killClaude(t, first.Pane)
	r.look(ctx, first.Pane, "killed")
	again := agentRow(t, roster, ctx, "w-1", 90*time.Second, "restarted", func(a projections.Agent) bool {
		return a.Restarts == 1 && a.SessionID != "" && !a.Starting && a.Ready()
	})
	r.screenReady(ctx, again.Pane)
	r.look(ctx, again.Pane, "restarted")
	r.end(ctx, "killed")
	if again.SessionID != first.SessionID {
		t.Errorf("restarted with session %s, want %s resumed", again.SessionID, first.SessionID)
	}

	r.begin("resumed")
	env := turn("echo: which word did I ask you to remember?")
	settle()
	r.end(ctx, "resumed")
	if env.SessionID != first.SessionID {
		t.Errorf("the resumed turn ran in session %s, want %s", env.SessionID, first.SessionID)
	}
	r.finish()
}
