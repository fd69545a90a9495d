package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// hookBin and fleetdBin are built side by side, as `go build -o bin/
// ./cmd/...` puts them: the new hook is compared with `fleetd hook`.
var hookBin, fleetdBin string

func TestMain(m *testing.M) { os.Exit(buildBoth(m)) }

func buildBoth(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fleetd-hook-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command("go", "build", "-o", dir+"/", ".", "../fleetd").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fleetd-hook and fleetd: %v\n%s", err, out)
		return 1
	}
	hookBin, fleetdBin = filepath.Join(dir, "fleetd-hook"), filepath.Join(dir, "fleetd")
	return m.Run()
}

// hookCmd is how a settings file runs the hook: the new binary, or
// `fleetd hook` as an older fleetd wrote it.
type hookCmd struct {
	name string
	argv func(event string) []string
}

var hookCmds = []hookCmd{
	{"fleetd-hook", func(event string) []string { return []string{hookBin, event} }},
	{"fleetd hook", func(event string) []string { return []string{fleetdBin, "hook", event} }},
}

// paneEnv is a fleetd pane's environment for the exec'd hook.
func paneEnv(agent, url, spool string) []string {
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

func execHook(t testing.TB, argv, env []string, stdin string) (string, error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// transcript writes a session transcript whose turn p1 has ended.
func transcript(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	lines := `{"type":"user","promptId":"p1","sessionId":"s1","uuid":"u1","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","sessionId":"s1","uuid":"u2","message":{"id":"m1","model":"claude-opus-5-5","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"ECHO: hi"}],"usage":{"input_tokens":12,"output_tokens":3}}}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// payloads are Claude Code's payloads for every hook fleetd installs.
func payloads(t testing.TB) map[claudehook.Hook]string {
	common := fmt.Sprintf(`"session_id":"5a1c0e2f-3b4d-4c6e-8f90-a1b2c3d4e5f6","transcript_path":%q,"cwd":"/w","prompt_id":"p1","permission_mode":"auto"`, transcript(t))
	return map[claudehook.Hook]string{
		claudehook.SessionStart:     `{` + common + `,"hook_event_name":"SessionStart","source":"startup","model":"claude-opus-5-5"}`,
		claudehook.UserPromptSubmit: `{` + common + `,"hook_event_name":"UserPromptSubmit","prompt":"hi"}`,
		claudehook.Stop:             `{` + common + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"ECHO: hi"}`,
		claudehook.StopFailure:      `{` + common + `,"hook_event_name":"StopFailure","error":"rate_limit","error_details":"429","last_assistant_message":"API Error"}`,
		claudehook.Notification:     `{` + common + `,"hook_event_name":"Notification","notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"}`,
		claudehook.SessionEnd:       `{` + common + `,"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`,
	}
}

// The new binary appends what `fleetd hook` appends for the same payload:
// the same kinds, data and source, for every hook.
func TestTheHookAppendsWhatFleetdHookAppends(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	spool := t.TempDir()
	for hook, payload := range payloads(t) {
		got := map[string][]events.Event{}
		for i, c := range hookCmds {
			agent := fmt.Sprintf("w-%d-%s", i, hook.Arg())
			out, err := execHook(t, c.argv(hook.Arg()), paneEnv(agent, srv.ClientURL(), spool), payload)
			if err != nil || out != "" {
				t.Fatalf("%s %s: exit %v, output %q; want 0 and nothing said", c.name, hook.Arg(), err, out)
			}
			got[c.name] = eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent." + agent + ".>"}})
		}
		ours, theirs := got[hookCmds[0].name], got[hookCmds[1].name]
		if len(ours) == 0 || len(ours) != len(theirs) {
			t.Fatalf("%s: fleetd-hook appended %d events, fleetd hook %d; want the same, at least one", hook, len(ours), len(theirs))
		}
		for i := range ours {
			a, b := ours[i], theirs[i]
			if a.Type() != b.Type() || a.Source != b.Source || !reflect.DeepEqual(a.Data, b.Data) {
				t.Errorf("%s event %d: fleetd-hook %s %s %+v, fleetd hook %s %s %+v", hook, i, a.Type(), a.Source, a.Data, b.Type(), b.Source, b.Data)
			}
		}
	}
}

// Each command exits 0 whatever goes wrong, says why, and spools when
// NATS is away; what it spooled replays into the log.
func TestTheHookSpoolsWhenNATSIsDownAndAlwaysExitsZero(t *testing.T) {
	dead := fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePorts(t, 1)[0])
	stop := payloads(t)[claudehook.Stop]
	for _, c := range hookCmds {
		t.Run(c.name, func(t *testing.T) {
			spool := t.TempDir()
			tests := []struct {
				name, agent, event, stdin, want string
			}{
				{"outside a fleetd pane", "", "stop", stop, "not a fleetd pane"},
				{"junk payload", "w-1", "stop", "{{{", "malformed hook payload"},
				{"unknown event", "w-1", "pre-compact", stop, "unknown hook event"},
				{"NATS down", "w-1", "Stop", stop, "spooled 2 event(s)"},
			}
			for _, tt := range tests {
				start := time.Now()
				out, err := execHook(t, c.argv(tt.event), paneEnv(tt.agent, dead, spool), tt.stdin)
				if err != nil {
					t.Errorf("%s: exit %v, want 0 (output %q)", tt.name, err, out)
				}
				if !strings.Contains(out, tt.want) {
					t.Errorf("%s: output %q, want it to say %q (after %v)", tt.name, out, tt.want, time.Since(start))
				}
			}
			_, log := fleettest.StartLog(t, events.Options{})
			n, err := claudehook.ReplaySpool(context.Background(), log, spool)
			if err != nil || n != 2 {
				t.Fatalf("replay: %d, %v; want 2 events", n, err)
			}
			got := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-1.>"}})
			if len(got) != 2 || got[0].Data.(events.AgentReplied).Reply != "ECHO: hi" || got[0].Data.(events.AgentReplied).Tokens.In != 12 {
				t.Errorf("log after replay = %+v, want the reply with its usage and a status", got)
			}
		})
	}
}

// A Stop hook whose transcript has not shown the turn's end yet does not
// wait for it. Its payload carries the reply whole: the hook appends the
// reply at once, usage pending, and a detached finisher — `fleetd-hook
// stop --finish FILE --usage-only` — appends the turn's usage event once
// the transcript has it. A payload without the reply (Gemini CLI's may
// not carry it whole) leaves the reply itself to the finisher, which
// appends it with its usage.
func TestTheHooksDetachedFinisherAppendsWhatTheTranscriptLags(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
	}{
		{name: "the reply in the payload", reply: "ECHO: task"},
		{name: "no reply in the payload", reply: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
			dir := t.TempDir()
			path := filepath.Join(dir, "t.jsonl")
			user := `{"type":"user","promptId":"p9","sessionId":"s9","uuid":"u1","message":{"role":"user","content":"task"}}` + "\n"
			if err := os.WriteFile(path, []byte(user), 0o600); err != nil {
				t.Fatal(err)
			}
			payload := fmt.Sprintf(`{"session_id":"9d8c7b6a-5f4e-4d3c-8b2a-190817263544","transcript_path":%q,"cwd":"/w","prompt_id":"p9","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":%q}`, path, tc.reply)
			out, err := execHook(t, hookCmds[0].argv("stop"), paneEnv("w-9", srv.ClientURL(), filepath.Join(dir, "spool")), payload)
			if err != nil {
				t.Fatalf("hook: %v\n%s", err, out)
			}
			read := func(kind string) []events.Event {
				return eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-9." + kind}})
			}
			rs := read("replied")
			if tc.reply != "" {
				if len(rs) != 1 || rs[0].Data.(events.AgentReplied).Reply != tc.reply || !rs[0].Data.(events.AgentReplied).UsagePending {
					t.Fatalf("the hook appended %+v; want the reply at once, usage pending", rs)
				}
			} else if len(rs) != 0 {
				t.Fatalf("the hook appended %+v before the transcript showed the reply; want it left to the finisher", rs)
			}
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"type":"assistant","sessionId":"s9","uuid":"u2","message":{"id":"m1","model":"claude-opus-5-5","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"ECHO: task"}],"usage":{"input_tokens":120,"output_tokens":7}}}` + "\n")
			f.Close()
			if tc.reply != "" {
				var us []events.Event
				checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
					if us = read("usage"); len(us) == 0 {
						return errors.New("no usage event after the transcript caught up")
					}
					return nil
				})
				u := us[0].Data.(events.AgentUsage)
				if len(us) != 1 || u.PromptID != "p9" || u.Tokens.In != 120 || u.Tokens.Out != 7 || u.Model != "claude-opus-5-5" {
					t.Errorf("usage events %+v, want one for p9 with 120/7 tokens", us)
				}
				if rs := read("replied"); len(rs) != 1 {
					t.Errorf("%d replies, want the hook's one", len(rs))
				}
				return
			}
			checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
				if rs = read("replied"); len(rs) == 0 {
					return errors.New("no reply after the transcript caught up")
				}
				return nil
			})
			if r := rs[0].Data.(events.AgentReplied); len(rs) != 1 || r.Reply != tc.reply || r.Tokens.In != 120 || r.Tokens.Out != 7 || r.UsagePending {
				t.Errorf("replies %+v, want one with 120/7 tokens", rs)
			}
			if us := read("usage"); len(us) != 0 {
				t.Errorf("usage events %+v beside a reply that has its usage", us)
			}
		})
	}
}

// A bad command line exits 0 too: a settings file written by hand must
// never fail the agent's turns.
func TestABadCommandLineExitsZero(t *testing.T) {
	for _, args := range [][]string{nil, {"--timeout"}, {"stop", "extra"}, {"stop", "--bogus"}} {
		out, err := execHook(t, append([]string{hookBin}, args...), paneEnv("w-1", "nats://127.0.0.1:1", t.TempDir()), "{}")
		if err != nil || out == "" {
			t.Errorf("fleetd-hook %q: exit %v, output %q; want 0 and a usage note", args, err, out)
		}
	}
}
