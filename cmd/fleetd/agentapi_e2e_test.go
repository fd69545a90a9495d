package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/proc"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
)

// requireAgentapi skips a test without agentapi on PATH, or fails it where
// it must run (CI, FLEET_REQUIRE_AGENTAPI=1).
func requireAgentapi(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("agentapi"); err != nil {
		msg := "agentapi not on PATH: run `export PATH=\"$(.ci/install-agentapi.sh):$PATH\"` at the repository root to build it from ../shared/vendor"
		if os.Getenv("CI") == "true" || os.Getenv("FLEET_REQUIRE_AGENTAPI") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// startAgentapiFleet is startClaudeFleet under the agentapi runtime:
// `fleetd up --runtime agentapi` starts fleetd's agentapi host, whose
// panes each run under their own agentapi server; no herdr anywhere. The
// host outlives fleetd up (as herdr does), so the cleanup stops it.
func startAgentapiFleet(t *testing.T, works []string, roles func(baseURL string, env map[string]string) map[string]any, upArgs ...string) *claudeFleet {
	t.Helper()
	requireAgentapi(t)
	dir := t.TempDir()
	var trusted []string
	for _, w := range works {
		if err := os.MkdirAll(filepath.Join(dir, w), 0o755); err != nil {
			t.Fatal(err)
		}
		trusted = append(trusted, filepath.Join(dir, w))
	}
	return startAgentapiFleetIn(t, dir, trusted, roles, upArgs...)
}

// startAgentapiFleetIn is startAgentapiFleet in dir (which the caller
// removes after the test), with Claude's home trusting the directories
// named.
func startAgentapiFleetIn(t *testing.T, dir string, trusted []string, roles func(baseURL string, env map[string]string) map[string]any, upArgs ...string) *claudeFleet {
	t.Helper()
	requireAgentapi(t)
	f := newClaudeFleet(t, dir, trusted, roles)
	f.socket, f.runtime = agentapiHostSocket(f.dataDir), []string{"--runtime", "agentapi"}
	f.up = startUp(t, f.dataDir, append([]string{"--runtime", "agentapi", "--roles", f.rolesFile, "--heartbeat", "1s"}, upArgs...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, fleetdBin, "agentapi-host", "--stop", "--socket", f.socket).CombinedOutput(); err != nil {
			t.Logf("stop the agentapi host: %v: %s", err, out)
		}
		waitGone(t, dir, 20*time.Second)
	})
	t.Cleanup(f.dumpOnFailure)
	return f
}

// The real Claude Code under agentapi, driven by fleetd's one delivery
// engine through the agentapi runtime: each kind of text reaches the
// model exactly or is refused, with a canary turn after each; a kill -9
// of fleetd up mid-turn is re-attached (the turn is typed once and its
// reply arrives through the restarted fleetd); a killed agent is
// restarted under its role's policy.
func TestRealClaudeUnderAgentapi(t *testing.T) {
	claudeBin := fakeapi.RequireClaude(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	phase := phases(t)
	fleet := startAgentapiFleet(t, []string{"work"}, func(baseURL string, env map[string]string) map[string]any {
		return map[string]any{"w-local": claudeRole(claudeBin, baseURL, env, map[string]any{
			"restart": "on-failure", "restart_backoff": "200ms",
		})}
	}, "--submit-timeout", "30s")
	if h := fleet.health(ctx); h.Runtime != "agentapi" || !strings.Contains(h.RuntimeReason, "--runtime agentapi") {
		t.Errorf("/healthz runtime %q (%q), want agentapi and why", h.Runtime, h.RuntimeReason)
	}
	log, _ := connectLog(t, fleet.up.url)
	fleet.spawn(ctx, "a-1", "w-local", "work")
	fleet.waitReady(ctx, 90*time.Second, "a-1")
	phase("a-1 ready under agentapi")

	big := strings.Repeat("a line of a hundred-kilobyte text, to be handed over as a file by fleetd.\n", 100<<10/75)
	fleet.textTable(ctx, log, "a-1", fleet.work("work"), []textCase{
		{name: "plain text", text: "hello from the agentapi runtime", status: 200, delivery: "paste"},
		{name: "many lines", text: "code:\n    func main() {\n        fmt.Println(\"hi\")\n    }\nend of code", status: 200, delivery: "pieces"},
		{name: "non-ASCII", text: "naïve café — 日本語 ❯ ✓ 🎉", status: 200, delivery: "paste"},
		{name: "a 100 KB text", text: big, status: 200, delivery: "file"},
		{name: "a leading bang (bash mode)", text: "!touch PWNED-bang.txt", status: 200, delivery: "pieces"},
		{name: "a leading slash command", text: "/help me write the tests", status: 200, delivery: "file", attached: true},
		{name: "a leading hash", text: "#remember this", status: 200, delivery: "paste"},
		{name: "a trailing backslash", text: `the path is C:\`, status: 200, delivery: "pieces"},
	})
	phase("texts")

	// kill -9 of fleetd up while a turn is with the model: the agent
	// lives on in the agentapi host; the restarted fleetd re-attaches,
	// does not type the turn again, and takes its reply.
	slow := "a slow turn across a killed fleetd [delay=5s]"
	before := len(fleet.api.Requests())
	go fleet.send(ctx, leadshim.Message{To: "a-1", Text: slow, Timeout: "2m"})
	checkfor.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		for _, r := range fleet.api.Requests()[before:] {
			if r.Prompt == slow {
				return nil
			}
		}
		return fmt.Errorf("the slow prompt has not reached the model yet")
	})
	if err := fleet.up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	fleet.up.cmd.Wait()
	fleet.up = restartUp(t, fleet.up, fleet.dataDir, "--runtime", "agentapi", "--roles", fleet.rolesFile, "--heartbeat", "1s", "--submit-timeout", "30s")
	if h := fleet.health(ctx); !strings.Contains(h.RuntimeReason, "re-attached") {
		t.Errorf("/healthz after the restart: %q, want the host re-attached", h.RuntimeReason)
	}
	var turn lifecycle.Turn
	checkfor.Eventually(t, 90*time.Second, 200*time.Millisecond, func() error {
		b := lifecycle.NewBook()
		for _, ev := range readEvents(t, ctx, log, "fleet.>") {
			b.Apply(ev)
		}
		found := false
		b.Turns(func(tn lifecycle.Turn) bool {
			if tn.Text == slow {
				turn, found = tn, true
				return false
			}
			return true
		})
		if !found || turn.State != lifecycle.StateReplied {
			return fmt.Errorf("the slow turn: %+v", turn)
		}
		return nil
	})
	if turn.Reply != "ECHO: "+slow {
		t.Errorf("slow turn's reply %q", turn.Reply)
	}
	typed := 0
	for _, ev := range readEvents(t, ctx, log, "fleet.agent.a-1.>") {
		if _, ok := ev.Data.(events.AgentTyped); ok && ev.CorrelationID == turn.ID {
			typed++
		}
	}
	seen := 0
	for _, r := range fleet.api.Requests()[before:] {
		if r.Prompt == slow {
			seen++
		}
	}
	if typed != 1 || seen != 1 {
		t.Errorf("the slow turn was typed %d times and reached the model %d times, want once each", typed, seen)
	}
	if r := fleet.send(ctx, leadshim.Message{To: "a-1", Text: "canary after the restart", Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: canary after the restart" {
		t.Fatalf("canary after the restart: HTTP %d %s", r.status, r.body)
	}
	phase("fleetd up killed and restarted mid-turn")

	// The agent's process killed: restarted under its role's policy.
	pane := mustPane(t, fleet, ctx, "a-1")
	fleet.killClaude(t, pane)
	checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if a, ok := findAgent(roster, "a-1"); !ok || a.Restarts != 1 || !a.Ready() || a.Starting {
			return fmt.Errorf("a-1 not restarted and ready yet: %+v", a)
		}
		return nil
	})
	if r := fleet.send(ctx, leadshim.Message{To: "a-1", Text: "after the agent's restart", Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: after the agent's restart" {
		t.Fatalf("turn after the agent's restart: HTTP %d %s", r.status, r.body)
	}
	phase("agent killed and restarted")

	// The agent's agentapi server killed: the pane is gone with it, and
	// so is the agent, which is restarted under its role's policy.
	killAgentapiOf(t, fleet.socket, mustPane(t, fleet, ctx, "a-1"))
	checkfor.Eventually(t, 90*time.Second, 100*time.Millisecond, func() error {
		roster, err := fleet.roster(ctx)
		if err != nil {
			return err
		}
		if a, ok := findAgent(roster, "a-1"); !ok || a.Restarts != 2 || !a.Ready() || a.Starting {
			return fmt.Errorf("a-1 not restarted after its agentapi died yet: %+v", a)
		}
		return nil
	})
	if r := fleet.send(ctx, leadshim.Message{To: "a-1", Text: "after agentapi's death", Timeout: "90s"}); r.status != 200 || r.env.Reply != "ECHO: after agentapi's death" {
		t.Fatalf("turn after agentapi's death: HTTP %d %s", r.status, r.body)
	}
	phase("agentapi killed, agent restarted")

	if marks, _ := filepath.Glob(filepath.Join(fleet.dir, "*", "PWNED*")); len(marks) > 0 {
		t.Errorf("marker files were created, so text ran in a shell: %v", marks)
	}
}

// health reads the fleet's /healthz.
func (f *claudeFleet) health(ctx context.Context) leadshim.Health {
	f.t.Helper()
	var h leadshim.Health
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.up.http+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		f.t.Fatal(err)
	}
	return h
}

// killAgentapiOf SIGKILLs the agentapi server whose program is the pane's
// (its child carries the pane's HERDR_PANE_ID and HERDR_SOCKET_PATH).
func killAgentapiOf(t *testing.T, socket, pane string) {
	t.Helper()
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		env, err := os.ReadFile(e)
		if err != nil || !bytes.Contains(env, []byte("HERDR_PANE_ID="+pane+"\x00")) || !bytes.Contains(env, []byte("HERDR_SOCKET_PATH="+socket+"\x00")) {
			continue
		}
		st, ok := proc.ReadStat(filepath.Dir(e))
		if !ok {
			continue
		}
		parent, ok := proc.ReadStat(filepath.Join("/proc", strconv.Itoa(st.PPID)))
		if ok && parent.Comm == "agentapi" {
			if err := syscall.Kill(parent.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no agentapi server runs pane %s", pane)
}
