package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/proc"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// A real Claude Code worker whose process is killed comes back: its role
// restarts on failure. Killed while idle, it is respawned in a new pane
// and resumes its session — the fake API's next request for it carries
// the conversation from before — while a role turn sent meanwhile is
// answered by the other worker. Killed in the middle of a turn, that turn
// fails agent_died and is never typed again, and the worker is back for
// the next one.
func TestRealClaudeWorkerKilledIsRestartedAndResumesItsSession(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	phase := phases(t)

	fleet := startClaudeFleet(t, []string{"work-1", "work-2"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-local": claudeRole(claudeBin, baseURL, env, map[string]any{
			"restart":         "on-failure",
			"restart_backoff": "200ms",
		})}
	}, "--submit-timeout", "30s")
	fleet.spawn(ctx, "w-1", "w-local", "work-1")
	fleet.spawn(ctx, "w-2", "w-local", "work-2")
	ready := func(name string, restarts int) projections.Agent {
		t.Helper()
		var a projections.Agent
		checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
			roster, err := fleet.roster(ctx)
			if err != nil {
				return err
			}
			var ok bool
			if a, ok = findAgent(roster, name); !ok || a.SessionID == "" || a.Starting || !a.Ready() || a.Restarts != restarts {
				return fmt.Errorf("%s not ready after %d restarts yet: %+v", name, restarts, a)
			}
			return nil
		})
		return a
	}
	ready("w-2", 0)
	before := ready("w-1", 0)
	phase("both workers ready")

	alpha := "alpha: remember the word kumquat"
	if r := fleet.send(ctx, leadshim.Message{To: "w-1", Text: alpha, Timeout: "2m"}); r.status != http.StatusOK || r.env.Status != "replied" {
		t.Fatalf("first turn: HTTP %d %s", r.status, r.body)
	}

	// Claude Code writes the conversation a resume reads a moment after
	// the turn's Stop hook: killed before that, it has nothing to resume
	// (`No conversation found`) and fleetd starts it afresh. What is
	// tested here is the resume: wait until the conversation is on disk.
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		files, _ := filepath.Glob(filepath.Join(fleet.home, ".claude", "projects", "*", before.SessionID+".jsonl"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte("kumquat")) && bytes.Contains(b, []byte(`"type":"assistant"`)) {
				return nil
			}
		}
		return fmt.Errorf("w-1's conversation %s is not on disk yet (%v)", before.SessionID, files)
	})

	// Killed while idle.
	fleet.killClaude(t, before.Pane)
	phase("killed w-1's claude while idle")
	// A turn by name comes at once, before the death is noticed: it waits
	// through the restart (queue), and the shell the dead pane showed is
	// no attention of the new session's.
	yes := true
	queuedDone := make(chan sendResult, 1)
	go func() {
		queuedDone <- fleet.send(ctx, leadshim.Message{To: "w-1", Text: "bravo-2: for w-1 once it is back", Timeout: "2m", Queue: &yes})
	}()
	role := fleet.send(ctx, leadshim.Message{To: "role:w-local", Text: "bravo: any worker", Timeout: "2m"})
	if role.status != http.StatusOK || role.env.Status != "replied" || role.env.Agent != "w-2" {
		t.Errorf("role turn sent while w-1 was dead: HTTP %d %s, want replied by w-2", role.status, role.body)
	}
	after := ready("w-1", 1)
	if after.NeedsAttention != "" {
		t.Errorf("w-1 after its restart needs attention: %s (%s)", after.NeedsAttention, after.AttentionDetail)
	}
	if r := <-queuedDone; r.status != http.StatusOK || r.env.Status != "replied" || r.env.Agent != "w-1" {
		t.Errorf("the turn queued for w-1 at its death: HTTP %d %s, want replied by w-1", r.status, r.body)
	}
	if after.Pane == before.Pane || after.SessionID != before.SessionID {
		t.Errorf("w-1 restarted in pane %s with session %s, want a new pane resuming session %s (was pane %s)", after.Pane, after.SessionID, before.SessionID, before.Pane)
	}
	phase(fmt.Sprintf("w-1 restarted in %s, resuming %s", after.Pane, after.SessionID))
	charlie := "charlie: which word did I ask you to remember?"
	if r := fleet.send(ctx, leadshim.Message{To: "w-1", Text: charlie, Timeout: "2m"}); r.status != http.StatusOK || r.env.Status != "replied" {
		t.Fatalf("turn after the restart: HTTP %d %s", r.status, r.body)
	}
	var resumed bool
	for _, req := range fleet.api.Requests() {
		if req.Prompt == charlie && bytes.Contains(req.Body, []byte(alpha)) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("the fake API's request for %q does not carry the earlier conversation (%q)", charlie, alpha)
	}

	// Killed in the middle of a turn.
	h := &fleetHost{name: "up", httpURL: fleet.up.http}
	slow := "delta: take your time [delay=2m]"
	id, err := sendAsync(ctx, h, "w-1", slow)
	if err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		env, err := turnAt(ctx, h, id, "")
		if err == nil && env.Status != string(lifecycle.StateSubmitted) {
			err = fmt.Errorf("turn %s is %s, want submitted", id, env.Status)
		}
		return err
	})
	fleet.killClaude(t, after.Pane)
	phase("killed w-1's claude in the middle of a turn")
	env, err := turnAt(ctx, h, id, "60s")
	if err != nil || env.Status != string(lifecycle.StateFailed) || env.Reason != events.ReasonAgentDied {
		t.Errorf("the turn in flight: %+v, %v; want failed agent_died", env, err)
	}
	ready("w-1", 2)
	phase("w-1 restarted again")
	if r := fleet.send(ctx, leadshim.Message{To: "w-1", Text: "echo: back again", Timeout: "2m"}); r.status != http.StatusOK || r.env.Status != "replied" {
		t.Errorf("turn after the second restart: HTTP %d %s", r.status, r.body)
	}
	log, _ := connectLog(t, fleet.up.url)
	typed := 0
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.w-1.typed") {
		if ev.CorrelationID == id {
			typed++
		}
	}
	if typed != 1 {
		t.Errorf("the killed turn was typed %d times, want once", typed)
	}
	phase("done")
}

// killClaude kills (-9) the agent of pane — every process of the pane
// but its shell — and waits until they are gone.
func (f *claudeFleet) killClaude(t *testing.T, pane string) {
	t.Helper()
	type pidParent struct{ pid, ppid int }
	var procs []pidParent
	links, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, l := range links {
		env, err := os.ReadFile(l)
		if err != nil || !bytes.Contains(env, []byte("HERDR_PANE_ID="+pane+"\x00")) || !bytes.Contains(env, []byte("HERDR_SOCKET_PATH="+f.socket+"\x00")) {
			continue
		}
		// Not a Stop hook's detached finisher: it carries the pane's
		// environment, but in a session of its own, off the terminal.
		if st, ok := proc.ReadStat(filepath.Dir(l)); ok && st.TTY != 0 {
			procs = append(procs, pidParent{st.PID, st.PPID})
		}
	}
	isPane := map[int]bool{}
	for _, p := range procs {
		isPane[p.pid] = true
	}
	shell := 0
	for _, p := range procs {
		if !isPane[p.ppid] {
			shell = p.pid
		}
	}
	// The agent is every process of the pane but its shell: a CLI that
	// runs behind a launcher (codex's node script and its native binary)
	// dies whole, as it does when it crashes.
	var victims []int
	for _, p := range procs {
		if p.pid != shell && shell != 0 {
			victims = append(victims, p.pid)
		}
	}
	if len(victims) == 0 {
		t.Fatalf("no agent process in pane %s (its processes: %v)", pane, procs)
	}
	for _, victim := range victims {
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			t.Fatal(err)
		}
	}
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		for _, victim := range victims {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", victim)); err == nil {
				return fmt.Errorf("process %d still there", victim)
			}
		}
		return nil
	})
}
