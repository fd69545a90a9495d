package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
)

const stopPayload = `{"session_id":"5a1c0e2f-3b4d-4c6e-8f90-a1b2c3d4e5f6","transcript_path":"/nonexistent.jsonl","cwd":"/w","prompt_id":"p1","permission_mode":"auto",` +
	`"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"ECHO: hi","background_tasks":[],"session_crons":[]}`

// stopPayloadWithTranscript is stopPayload with a transcript that shows
// its turn ended, so the hook does not wait for one (or hand the reply to
// a detached finisher, as it does while the transcript is not there).
func stopPayloadWithTranscript(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	lines := `{"type":"user","promptId":"p1","sessionId":"s1","uuid":"u1","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","sessionId":"s1","uuid":"u2","message":{"id":"m1","model":"claude-opus-5-5","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"ECHO: hi"}],"usage":{"input_tokens":12,"output_tokens":3}}}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(stopPayload, "/nonexistent.jsonl", path, 1)
}

// hookEnv is a fleetd pane's environment for the exec'd hook.
func hookEnv(agent, url, spool string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLEET_") && !strings.HasPrefix(kv, "HERDR_") {
			env = append(env, kv)
		}
	}
	if agent != "" {
		env = append(env, "FLEET_AGENT_ID="+agent)
	}
	return append(env, "FLEET_HOST=h1", "FLEET_NATS_URL="+url, "FLEET_SPOOL_DIR="+spool)
}

func execHook(t testing.TB, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(fleetdBin, append([]string{"hook"}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// `fleetd hook` exits 0 whatever goes wrong, says why on stderr, and
// spools when NATS is away; `fleetd hook replay` drains the spool.
func TestHookAlwaysExitsZeroAndReplaySpool(t *testing.T) {
	spool := t.TempDir()
	dead := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	stop := stopPayloadWithTranscript(t)
	tests := []struct {
		name, agent, event, stdin, want string
	}{
		{"outside a fleetd pane", "", "stop", stop, "not a fleetd pane"},
		{"junk payload", "w-1", "stop", "{{{", "malformed hook payload"},
		{"unknown event", "w-1", "pre-compact", stop, "unknown hook event"},
		{"NATS down", "w-1", "Stop", stop, "spooled 2 event(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := execHook(t, hookEnv(tt.agent, dead, spool), tt.stdin, tt.event)
			if err != nil {
				t.Errorf("exit: %v, want 0 (output %q)", err, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output %q, want it to say %q", out, tt.want)
			}
		})
	}
	srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	cmd := exec.Command(fleetdBin, "hook", "replay", "--spool", spool, "--nats", srv.ClientURL())
	cmd.Env = hookEnv("", srv.ClientURL(), spool)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "replayed 2 event(s)") {
		t.Fatalf("replay: %v %s", err, out)
	}
	got := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-1.>"}})
	if len(got) != 2 || got[0].Data.(events.AgentReplied).Reply != "ECHO: hi" {
		t.Errorf("log after replay = %+v", got)
	}
}

func TestHooksSettingsWritesTheRunningBinary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "settings.json")
	if out, err := exec.Command(fleetdBin, "hooks", "settings", "--write", path).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	// StopFailure waits for the prompt's hook, which Claude Code runs async.
	if got, want := s.Hooks["StopFailure"][0].Hooks[0].Command, fleetdBin+" hook stop-failure --after-prompt"; got != want {
		t.Errorf("StopFailure command = %q, want %q", got, want)
	}
}

// BenchmarkHookBinary is `fleetd hook stop` exec'd as Claude runs it,
// against a running NATS: process start to exit.
func BenchmarkHookBinary(b *testing.B) {
	srv, _ := fleettest.StartLog(b, events.Options{}, natstest.WithTCP())
	env := hookEnv("w-bench", srv.ClientURL(), b.TempDir())
	transcript, err := filepath.Abs("../../claudehook/testdata/transcript.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	payload := strings.Replace(strings.Replace(stopPayload, "/nonexistent.jsonl", transcript, 1), `"p1"`, `"p2"`, 1)
	for b.Loop() {
		if out, err := execHook(b, env, payload, "stop"); err != nil || out != "" {
			b.Fatalf("%v %q", err, out)
		}
	}
}

// Claude Code may write the reply's transcript line only after its Stop
// hook returns — or, on a loaded machine, the whole transcript of a
// session's first turn. The hook then appends the reply (whole in its
// payload) at once, usage pending, and a detached finisher appends the
// turn's usage event once the transcript shows it.
func TestStopHookDetachesWhenTheTranscriptLagsAndTheReplyCarriesItsUsage(t *testing.T) {
	t.Run("the reply's line comes late", func(t *testing.T) { testTranscriptLags(t, true) })
	t.Run("the transcript comes late", func(t *testing.T) { testTranscriptLags(t, false) })
}

// testTranscriptLags runs a Stop hook on a transcript without the reply's
// line (and without the file at all unless userFirst), then writes what
// is missing.
func testTranscriptLags(t *testing.T, userFirst bool) {
	srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	dir := t.TempDir()
	transcript := filepath.Join(dir, "t.jsonl")
	user := `{"type":"user","promptId":"p9","sessionId":"s9","uuid":"u1","message":{"role":"user","content":"task"}}` + "\n"
	if userFirst {
		if err := os.WriteFile(transcript, []byte(user), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	payload := fmt.Sprintf(`{"session_id":"9d8c7b6a-5f4e-4d3c-8b2a-190817263544","transcript_path":%q,"cwd":"/w","prompt_id":"p9","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"ECHO: task"}`, transcript)
	out, err := execHook(t, hookEnv("w-9", srv.ClientURL(), filepath.Join(dir, "spool")), payload, "stop")
	if err != nil {
		t.Fatalf("hook: %v\n%s", err, out)
	}
	replies := func() []events.AgentReplied {
		var rs []events.AgentReplied
		for _, ev := range eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-9.replied"}}) {
			rs = append(rs, ev.Data.(events.AgentReplied))
		}
		return rs
	}
	if rs := replies(); len(rs) != 1 || rs[0].Reply != "ECHO: task" || !rs[0].UsagePending || rs[0].Tokens != (events.Tokens{}) {
		t.Fatalf("the hook appended %+v; want the reply at once, usage pending", rs)
	}
	// Claude writes the reply's line (and the user's, if it had not)
	// after the hook has returned.
	assistant := `{"type":"assistant","sessionId":"s9","uuid":"u2","message":{"id":"m1","model":"claude-opus-5-5","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"ECHO: task"}],"usage":{"input_tokens":120,"output_tokens":7}}}` + "\n"
	if !userFirst {
		assistant = user + assistant
	}
	f, err := os.OpenFile(transcript, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(assistant)
	f.Close()
	var us []events.Event
	checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		us = eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-9.usage"}})
		if len(us) == 0 {
			return errors.New("no usage event after the transcript caught up")
		}
		return nil
	})
	if u := us[0].Data.(events.AgentUsage); len(us) != 1 || u.Tokens.In != 120 || u.Tokens.Out != 7 || u.Model != "claude-opus-5-5" || u.PromptID != "p9" {
		t.Errorf("usage events %+v, want one for p9 with 120/7 tokens and the model", us)
	}
	if rs := replies(); len(rs) != 1 {
		t.Errorf("%d replies, want the hook's one", len(rs))
	}
}

// Every agent's every prompt and reply execs `fleetd hook`, and the whole
// binary's package initialisation runs before it does anything: fleetd's
// own packages compile their regexps and templates on first use, not at
// start (they were ~0.6 ms of the hook's ~9 ms of CPU, more than any
// dependency). The runtime's init trace counts each package's
// allocations; fleetd's together stay near nothing.
func TestTheHookStartsWithoutFleetdPackagesDoingWork(t *testing.T) {
	cmd := exec.Command(fleetdBin, "hook", "stop")
	cmd.Env = append(hookEnv("", "nats://127.0.0.1:1", t.TempDir()), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader(stopPayloadWithTranscript(t))
	out, _ := cmd.CombinedOutput()
	allocs, pkgs := 0, 0
	for line := range strings.Lines(string(out)) {
		// init github.com/fleetd/fleetd/roles @3.7 ms, 0.066 ms clock, 56984 bytes, 773 allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/fleetd/fleetd/") {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(f[9], "%d", &n); err != nil || f[10] != "allocs" {
			t.Fatalf("unexpected init trace line %q", line)
		}
		pkgs++
		allocs += n
		if n > 20 {
			t.Errorf("%s allocates %d times at start; compile its regexps and templates on first use (sync.OnceValue)", f[1], n)
		}
	}
	if pkgs == 0 {
		t.Fatalf("no init trace of fleetd's packages in the hook's output:\n%s", out)
	}
	t.Logf("%d fleetd packages initialised with %d allocations", pkgs, allocs)
}
