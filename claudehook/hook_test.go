package claudehook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/projections"
)

const agent = "w-claude-1"

// Payloads exactly as HOOKS.md shows them (StopFailure and Notification as
// fakeapi's end-to-end tests observed them).
var payloads = map[Hook]string{
	SessionStart: `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","transcript_path":"testdata/transcript.jsonl",
 "cwd":"/home/dev/proj","hook_event_name":"SessionStart","source":"startup","model":"claude-opus-5-5"}`,
	UserPromptSubmit: `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","transcript_path":"testdata/transcript.jsonl","cwd":"/home/dev/proj","prompt_id":"p2","permission_mode":"auto",
 "hook_event_name":"UserPromptSubmit","prompt":"please reply with the word PINEAPPLE"}`,
	Stop: `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","transcript_path":"testdata/transcript.jsonl","cwd":"/home/dev/proj","prompt_id":"p2","permission_mode":"auto",
 "effort":{"level":"medium"},"hook_event_name":"Stop","stop_hook_active":false,
 "last_assistant_message":"ECHO: second task","background_tasks":[],"session_crons":[]}`,
	StopFailure: `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","transcript_path":"testdata/transcript.jsonl","cwd":"/home/dev/proj","prompt_id":"p2",
 "hook_event_name":"StopFailure","error":"invalid_request","last_assistant_message":"API Error: 400 bad request"}`,
	Notification: `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","transcript_path":"testdata/transcript.jsonl","cwd":"/home/dev/proj","prompt_id":"p2",
 "hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`,
	SessionEnd: `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","prompt_id":"p2","hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`,
}

// fleet is a NATS server with the FLEET stream, reachable over TCP as a
// hook process would reach it.
type fleet struct {
	srv *natstest.Server
	log events.Log
	url string
}

// startFleet starts the server on TCP, with opts, and creates the stream.
func startFleet(t testing.TB, opts ...natstest.Option) fleet {
	t.Helper()
	srv, log := fleettest.StartLog(t, events.Options{}, append([]natstest.Option{natstest.WithTCP()}, opts...)...)
	return fleet{srv: srv, log: log, url: srv.ClientURL()}
}

// fleetOn is the fleet of a running server that has the stream.
func fleetOn(srv *natstest.Server) fleet {
	return fleet{srv: srv, log: events.New(srv.JS, events.Options{}), url: srv.ClientURL()}
}

// currentTurn is the turn the roster shows the agent working on.
const currentTurn = "01JTURN0000000000000000000"

// putRosterRow writes the agent's roster row, as the gateway's projection
// would.
func (f fleet) putRosterRow(t testing.TB, row string) {
	t.Helper()
	ctx := context.Background()
	kv, err := f.srv.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: projections.BucketRoster})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, agent, []byte(row)); err != nil {
		t.Fatal(err)
	}
}

// assertCorrelated checks that every event carries the roster's current
// turn as its correlation id.
func assertCorrelated(t testing.TB, got []events.Event) {
	t.Helper()
	for _, ev := range got {
		if ev.CorrelationID != currentTurn {
			t.Errorf("%s correlation id = %q, want the roster's current turn", ev.Type(), ev.CorrelationID)
		}
	}
}

func (f fleet) agentEvents(t testing.TB) []events.Event {
	t.Helper()
	s, _ := events.AgentAll(agent)
	return eventstest.ReadAll(t, f.log, events.Query{Subjects: []string{s}})
}

// lastReplied is the agent's last replied event; it fails t when there is
// none.
func (f fleet) lastReplied(t testing.TB) events.AgentReplied {
	t.Helper()
	all := f.agentEvents(t)
	for i := len(all) - 1; i >= 0; i-- {
		if r, ok := all[i].Data.(events.AgentReplied); ok {
			return r
		}
	}
	t.Fatal("no replied event")
	return events.AgentReplied{}
}

// paneEnv is a fleetd pane's environment.
func paneEnv(url, spool string, extra ...string) func(string) string {
	m := map[string]string{
		"FLEET_AGENT_ID": agent, "FLEET_ROLE": "w-claude", "FLEET_HOST": "h1",
		"FLEET_NATS_URL": url, "FLEET_SPOOL_DIR": spool,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

func run(t testing.TB, hook string, payload string, env func(string) string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	err := Run(context.Background(), hook, strings.NewReader(payload), env, Options{Stderr: &stderr, NoHerdr: true})
	return stderr.String(), err
}

func TestRunAppendsEachHooksEvents(t *testing.T) {
	f := startFleet(t)
	tests := []struct {
		hook Hook
		arg  string // spelling on the command line
		want []events.Data
	}{
		{SessionStart, "session-start", []events.Data{
			events.AgentSession{SessionID: "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", State: "started", Source: "startup", TranscriptPath: "testdata/transcript.jsonl", Model: "claude-opus-5-5", Cwd: "/home/dev/proj"},
			events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook", Detail: "session startup"},
		}},
		{UserPromptSubmit, "UserPromptSubmit", []events.Data{
			events.AgentSubmitted{Via: "hook", PromptID: "p2", SessionID: "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", Prompt: "please reply with the word PINEAPPLE"},
			events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook", Detail: "prompt submitted"},
		}},
		{Stop, "stop", []events.Data{
			events.AgentReplied{Reply: "ECHO: second task", PromptID: "p2", SessionID: "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", Model: "claude-opus-5-5",
				Tokens: events.Tokens{In: 450, Out: 70, CacheRead: 250, CacheCreation: 10}, CostUSD: 0.025, Transcript: "testdata/transcript.jsonl"},
			events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook", Detail: "turn over"},
		}},
		{StopFailure, "stop-failure", []events.Data{
			events.AgentFailed{Reason: ReasonAgentError, Message: "invalid_request: API Error: 400 bad request"},
			events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook", Detail: "turn failed"},
		}},
		{Notification, "notification", []events.Data{
			events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook", Detail: "permission_prompt: Claude needs your permission to use Bash"},
		}},
		{SessionEnd, "SESSION_END", []events.Data{
			events.AgentSession{SessionID: "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", State: "ended", Reason: "prompt_input_exit"},
		}},
	}
	spool := t.TempDir()
	seen := 0
	for _, tt := range tests {
		t.Run(string(tt.hook), func(t *testing.T) {
			stderr, err := run(t, tt.arg, payloads[tt.hook], paneEnv(f.url, spool))
			if err != nil {
				t.Fatalf("Run: %v (stderr %q)", err, stderr)
			}
			all := f.agentEvents(t)
			got := all[seen:]
			seen = len(all)
			if len(got) != len(tt.want) {
				t.Fatalf("appended %d events, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, ev := range got {
				if fmt.Sprintf("%#v", ev.Data) != fmt.Sprintf("%#v", tt.want[i]) {
					t.Errorf("event %d data = %#v\nwant %#v", i, ev.Data, tt.want[i])
				}
				if ev.Source != "fleetd/h1/hook" || ev.Subject != agent {
					t.Errorf("event %d source, subject = %q, %q", i, ev.Source, ev.Subject)
				}
				if _, err := ulid.ParseStrict(ev.ID); err != nil {
					t.Errorf("event %d id %q: %v", i, ev.ID, err)
				}
			}
		})
	}
}

func TestRunNotificationThatDoesNotBlockAppendsNothing(t *testing.T) {
	f := startFleet(t)
	_, err := run(t, "notification", `{"session_id":"4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10","hook_event_name":"Notification","notification_type":"idle_prompt","message":"Claude is waiting for your input"}`, paneEnv(f.url, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.agentEvents(t); len(got) != 0 {
		t.Errorf("an idle_prompt notification appended %+v", got)
	}
}

func TestRunCorrelatesWithTheRostersCurrentTurn(t *testing.T) {
	f := startFleet(t)
	f.putRosterRow(t, `{"agent":"w-claude-1","status":"working","current_turn":"`+currentTurn+`"}`)
	if stderr, err := run(t, "user-prompt-submit", payloads[UserPromptSubmit], paneEnv(f.url, t.TempDir())); err != nil {
		t.Fatal(err, stderr)
	}
	got := f.agentEvents(t)
	if len(got) != 2 {
		t.Fatalf("got %d events", len(got))
	}
	assertCorrelated(t, got)
}

func TestRunRejectsWhatIsNotAHook(t *testing.T) {
	f := startFleet(t)
	spool := t.TempDir()
	tests := []struct {
		name    string
		hook    string
		payload string
		env     func(string) string
		want    error
	}{
		{"no agent id: not a fleetd pane", "stop", payloads[Stop], func(k string) string {
			if k == "FLEET_AGENT_ID" {
				return ""
			}
			return paneEnv(f.url, spool)(k)
		}, ErrNoAgent},
		{"junk on stdin", "stop", "this is not json", paneEnv(f.url, spool), ErrPayload},
		{"empty stdin", "stop", "", paneEnv(f.url, spool), ErrPayload},
		{"truncated json", "stop", `{"session_id":"s","last_assist`, paneEnv(f.url, spool), ErrPayload},
		{"json array", "stop", `[1,2]`, paneEnv(f.url, spool), ErrPayload},
		{"unknown hook", "pre-tool-use", payloads[Stop], paneEnv(f.url, spool), ErrUnknownHook},
		// A session id goes on to a restart's --resume: one that is not
		// Claude Code's (a UUID) — here one that would kill the typed
		// line and run a command on the host — is never reported.
		{"session id with a control character", "session-start",
			`{"session_id":"x\u0015touch /tmp/fleetd-marker #","hook_event_name":"SessionStart","source":"startup"}`, paneEnv(f.url, spool), ErrPayload},
		{"session id that is no UUID", "stop", strings.ReplaceAll(payloads[Stop], "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", "4f52aa"), paneEnv(f.url, spool), ErrPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.hook, tt.payload, tt.env)
			if !errors.Is(err, tt.want) {
				t.Errorf("Run = %v, want %v", err, tt.want)
			}
			if err != nil && len(err.Error()) < 20 {
				t.Errorf("message %q is not a clear explanation", err)
			}
		})
	}
	if got := f.agentEvents(t); len(got) != 0 {
		t.Errorf("rejected hooks appended %+v", got)
	}
	if files, _ := pending(spool); len(files) != 0 {
		t.Errorf("rejected hooks spooled %d files", len(files))
	}
}

// deadURL is a NATS URL where nothing listens.
func deadURL(t *testing.T) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePorts(t, 1)[0])
}

func TestGatewayDownSpoolsThenReplaysExactlyOnce(t *testing.T) {
	spool := t.TempDir()
	down := paneEnv(deadURL(t), spool)

	start := time.Now()
	var stderr bytes.Buffer
	// One id source for both hooks, as their order in the spool is their
	// ids' order: two processes' ULIDs within one millisecond (a dead
	// port refuses at once) need not be in the order they were made,
	// which a real turn's hooks, milliseconds apart, never meet.
	ids := events.NewULIDSource(time.Now)
	err := Run(context.Background(), "user-prompt-submit", strings.NewReader(payloads[UserPromptSubmit]), down,
		Options{Stderr: &stderr, NoHerdr: true, Timeout: time.Second, NewID: ids})
	if err != nil {
		t.Fatalf("Run with NATS down = %v, want nil (spooled)", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run with NATS down took %v, want it bounded by its 1s timeout", took)
	}
	if !strings.Contains(stderr.String(), "spooled 2 event(s)") {
		t.Errorf("stderr = %q, want a note about spooling", stderr.String())
	}
	if err := Run(context.Background(), "stop", strings.NewReader(payloads[Stop]), down, Options{Stderr: io.Discard, NoHerdr: true, NewID: ids}); err != nil {
		t.Fatal(err)
	}
	files, err := pending(spool)
	if err != nil || len(files) != 4 {
		t.Fatalf("spool holds %d files (%v), want 4", len(files), err)
	}
	for _, f := range files {
		if filepath.Base(filepath.Dir(f.path)) != agent {
			t.Errorf("spooled %s outside the agent's directory", f.path)
		}
	}
	saved := copyDir(t, spool)

	f := startFleet(t)
	ctx := context.Background()
	n, err := ReplaySpool(ctx, f.log, spool)
	if err != nil || n != 4 {
		t.Fatalf("ReplaySpool = %d, %v; want 4, nil", n, err)
	}
	wantTypes := []events.Type{events.TypeAgentSubmitted, events.TypeAgentStatus, events.TypeAgentReplied, events.TypeAgentStatus}
	assertTypes(t, f.agentEvents(t), wantTypes)
	if got := f.agentEvents(t)[2].Data.(events.AgentReplied); got.Reply != "ECHO: second task" || got.Tokens.In != 450 {
		t.Errorf("replayed reply = %+v", got)
	}

	// Again: the spool is empty. Then the same files once more, as if a
	// crash had kept them after their append: dedupe stores nothing.
	if n, err := ReplaySpool(ctx, f.log, spool); n != 0 || err != nil {
		t.Errorf("second ReplaySpool = %d, %v; want 0, nil", n, err)
	}
	replayAgain(t, f, spool, saved, wantTypes)
}

// replayAgain restores the saved spool files and replays them, as after a
// crash that kept them past their append: every file is replayed, yet the
// log holds want, each event once, and the spool is left empty.
func replayAgain(t *testing.T, f fleet, spool string, saved map[string][]byte, want []events.Type) {
	t.Helper()
	restoreDir(t, saved, spool)
	if n, err := ReplaySpool(context.Background(), f.log, spool); n != len(saved) || err != nil {
		t.Errorf("ReplaySpool of the saved files again = %d, %v; want %d, nil", n, err, len(saved))
	}
	assertTypes(t, f.agentEvents(t), want)
	if files, _ := pending(spool); len(files) != 0 {
		t.Errorf("spool still holds %d files", len(files))
	}
}

func TestNextHookReplaysTheSpoolFirst(t *testing.T) {
	spool := t.TempDir()
	if _, err := run(t, "stop", payloads[Stop], paneEnv(deadURL(t), spool)); err != nil {
		t.Fatal(err)
	}
	other := func(k string) string {
		if k == "FLEET_AGENT_ID" {
			return "w-other"
		}
		return paneEnv(deadURL(t), spool)(k)
	}
	if _, err := run(t, "notification", payloads[Notification], other); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t)
	stderr, err := run(t, "session-end", payloads[SessionEnd], paneEnv(f.url, spool))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "replayed 2 spooled event(s)") {
		t.Errorf("stderr = %q, want a note about the replay", stderr)
	}
	assertTypes(t, f.agentEvents(t), []events.Type{events.TypeAgentReplied, events.TypeAgentStatus, events.TypeAgentSession})
	// Another agent's events wait for the gateway: an agent's NATS user
	// may not append them.
	if files, _ := pending(spool); len(files) != 1 || filepath.Base(filepath.Dir(files[0].path)) != "w-other" {
		t.Errorf("spool holds %v, want w-other's one event", files)
	}
}

func TestReplaySpoolMovesJunkAsideAndStopsWhenNATSFails(t *testing.T) {
	spool := t.TempDir()
	if _, err := run(t, "stop", payloads[Stop], paneEnv(deadURL(t), spool)); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(spool, agent, "01AAAAAAAAAAAAAAAAAAAAAAAA.json")
	if err := os.WriteFile(junk, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t)
	n, err := ReplaySpool(context.Background(), f.log, spool)
	if n != 2 || err == nil || !strings.Contains(err.Error(), "01AAAAAAAAAAAAAAAAAAAAAAAA") {
		t.Errorf("ReplaySpool = %d, %v; want 2 and an error naming the junk file", n, err)
	}
	if _, err := os.Stat(junk + ".bad"); err != nil {
		t.Errorf("junk not moved aside: %v", err)
	}

	// NATS gone mid-way: nothing is deleted that was not acknowledged.
	if _, err := run(t, "stop", payloads[Stop], paneEnv(deadURL(t), spool)); err != nil {
		t.Fatal(err)
	}
	f.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if n, err := ReplaySpool(ctx, f.log, spool); n != 0 || err == nil {
		t.Errorf("ReplaySpool with NATS gone = %d, %v; want 0 and an error", n, err)
	}
	if files, _ := pending(spool); len(files) != 2 {
		t.Errorf("spool holds %d files, want the 2 unacknowledged ones", len(files))
	}
}

func TestReplayerDrainsTheSpool(t *testing.T) {
	spool := t.TempDir()
	f := startFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	replays := make(chan int, 10)
	r := &Replayer{Dir: spool, Log: f.log, Interval: 50 * time.Millisecond, OnReplay: func(n int, err error) {
		if err == nil {
			replays <- n
		}
	}}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	if _, err := run(t, "stop", payloads[Stop], paneEnv(deadURL(t), spool)); err != nil {
		t.Fatal(err)
	}
	// The watch may start a pass between the hook's two files.
	for got := 0; got < 2; {
		select {
		case n := <-replays:
			got += n
		case <-time.After(10 * time.Second):
			t.Fatalf("the replayer drained %d of the 2 spooled events", got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	assertTypes(t, f.agentEvents(t), []events.Type{events.TypeAgentReplied, events.TypeAgentStatus})
}

// A hook that spools (here: NATS out of its reach) has its events in the
// log as soon as the gateway's replayer sees the file, not at its next
// periodic pass (an hour here): the agent's directory is new at the
// first spool, and watched for the second.
func TestReplayerReplaysWhatIsSpooledAtOnce(t *testing.T) {
	spool := t.TempDir()
	f := startFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	replays := make(chan int, 10)
	// Named with a trailing separator, as a --data-dir may be: the
	// watch still knows its agent directories.
	r := &Replayer{Dir: spool + string(filepath.Separator), Log: f.log, Interval: time.Hour, OnReplay: func(n int, err error) {
		if err != nil {
			t.Errorf("replay: %v", err)
			return
		}
		replays <- n
	}}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	for i, want := range []int{2, 2} {
		hook, payload := "stop", payloads[Stop]
		if i == 1 {
			hook, payload = "userpromptsubmit", payloads[UserPromptSubmit]
		}
		if _, err := run(t, hook, payload, paneEnv(deadURL(t), spool)); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < want; {
			select {
			case n := <-replays:
				got += n
			case <-time.After(10 * time.Second):
				t.Fatalf("spool %d: %d of %d events replayed within 10s (the next periodic pass is an hour away)", i+1, got, want)
			}
		}
	}
	assertTypes(t, f.agentEvents(t), []events.Type{events.TypeAgentReplied, events.TypeAgentStatus, events.TypeAgentSubmitted, events.TypeAgentStatus})
}

func TestSpoolDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"FLEET_SPOOL_DIR": "/s", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s"},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/fleetd/spool"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/fleetd/spool"},
	}
	for _, tt := range tests {
		if got := SpoolDir(env(tt.env)); got != tt.want {
			t.Errorf("SpoolDir(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestSettings(t *testing.T) {
	b, err := SettingsConfig{Fleetd: "/opt/fleet d/fleetd"}.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
				Async   bool   `json:"async"`
			} `json:"hooks"`
		} `json:"hooks"`
		Permissions struct {
			DefaultMode string `json:"defaultMode"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Hooks) != len(Hooks) {
		t.Errorf("%d hooks, want %d", len(got.Hooks), len(Hooks))
	}
	for _, h := range Hooks {
		m := got.Hooks[string(h)]
		if len(m) != 1 || len(m[0].Hooks) != 1 {
			t.Fatalf("%s: %+v", h, m)
		}
		c := m[0].Hooks[0]
		// The prompt's hook runs async; those after it in a turn wait
		// for it (order.go).
		want, async := "'/opt/fleet d/fleetd' hook "+h.Arg(), h == UserPromptSubmit
		if h == Stop || h == StopFailure || h == Notification {
			want += " --after-prompt"
		}
		if c.Type != "command" || c.Command != want || c.Timeout != 10 || c.Async != async {
			t.Errorf("%s hook = %+v, want command %q, timeout 10, async %v", h, c, want, async)
		}
		if back, err := ParseHook(h.Arg()); back != h || err != nil {
			t.Errorf("ParseHook(%q) = %q, %v", h.Arg(), back, err)
		}
	}
	if got.Permissions.DefaultMode != "default" {
		t.Errorf("defaultMode = %q, want default", got.Permissions.DefaultMode)
	}
	if _, err := (SettingsConfig{}).JSON(); err == nil {
		t.Error("Settings without a fleetd path did not fail")
	}
	b, _ = SettingsConfig{Fleetd: "fleetd", DefaultMode: "-"}.JSON()
	if strings.Contains(string(b), "permissions") {
		t.Errorf("DefaultMode \"-\" still wrote permissions: %s", b)
	}
}

func assertTypes(t *testing.T, got []events.Event, want []events.Type) {
	t.Helper()
	types := make([]events.Type, len(got))
	for i, ev := range got {
		types[i] = ev.Type()
	}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("log holds %v, want %v", types, want)
	}
}

func copyDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, _ := pending(dir)
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		out[f.path] = b
	}
	return out
}

func restoreDir(t *testing.T, saved map[string][]byte, _ string) {
	t.Helper()
	for p, b := range saved {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// Claude Code writes its transcript asynchronously: the Stop hook can run
// before the reply's line is on disk. The hook waits (boundedly) for the
// turn's final message instead of reporting a reply with no usage.
func TestStopWaitsForTheReplyToReachTheTranscript(t *testing.T) {
	f := startFleet(t)
	fixture, err := os.ReadFile("testdata/transcript.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(fixture), "\n")
	// Everything up to the tool result: the turn p2 has not ended yet.
	early, late := strings.Join(lines[:8], ""), strings.Join(lines[8:], "")
	stop := func(path string, wait time.Duration) events.AgentReplied {
		t.Helper()
		payload := strings.Replace(payloads[Stop], "testdata/transcript.jsonl", path, 1)
		var stderr bytes.Buffer
		err := Run(context.Background(), "stop", strings.NewReader(payload), paneEnv(f.url, t.TempDir()),
			Options{Stderr: &stderr, NoHerdr: true, TranscriptWait: wait})
		if err != nil {
			t.Fatalf("Run: %v (stderr %q)", err, stderr.String())
		}
		return f.lastReplied(t)
	}

	path := filepath.Join(t.TempDir(), "late.jsonl")
	if err := os.WriteFile(path, []byte(early), 0o600); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = fh.WriteString(late)
			err = errors.Join(err, fh.Close())
		}
		written <- err
	}()
	r := stop(path, 5*time.Second)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if want := (events.Tokens{In: 450, Out: 70, CacheRead: 250, CacheCreation: 10}); r.Tokens != want || r.Model != "claude-opus-5-5" {
		t.Errorf("reply written late: tokens %+v model %q, want %+v claude-opus-5-5", r.Tokens, r.Model, want)
	}

	// A transcript Claude Code has not made yet (a session's first turn
	// on a loaded machine): waited for as for a late line.
	absent := filepath.Join(t.TempDir(), "absent.jsonl")
	go func() {
		time.Sleep(150 * time.Millisecond)
		written <- os.WriteFile(absent, fixture, 0o600)
	}()
	r = stop(absent, 5*time.Second)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if want := (events.Tokens{In: 450, Out: 70, CacheRead: 250, CacheCreation: 10}); r.Tokens != want || r.Model != "claude-opus-5-5" {
		t.Errorf("transcript made late: tokens %+v model %q, want %+v claude-opus-5-5", r.Tokens, r.Model, want)
	}

	// One that never comes (a session that keeps none) is waited for
	// about a second, not the whole wait: the reply goes without usage.
	start := time.Now()
	r = stop(filepath.Join(t.TempDir(), "none.jsonl"), 5*time.Second)
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("a transcript that never came held the reply %v, want about %v", d, missingTranscriptWait)
	}
	if r.Tokens != (events.Tokens{}) || r.Reply == "" {
		t.Errorf("no transcript: reply %+v, want its text without usage", r)
	}

	// A transcript that never shows the end: the hook gives up after the
	// wait and reports what is there.
	never := filepath.Join(t.TempDir(), "never.jsonl")
	if err := os.WriteFile(never, []byte(early), 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r = stop(never, 200*time.Millisecond)
	if d := time.Since(start); d < 200*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("gave up after %v, want about the 200ms wait", d)
	}
	if want := (events.Tokens{In: 200, Out: 30, CacheRead: 100}); r.Tokens != want {
		t.Errorf("unended turn: tokens %+v, want the tool round's %+v", r.Tokens, want)
	}
}

// A reply longer than an event's text limit would be refused by the log
// and leave its turn open for ever: it is cut, on a rune boundary, and
// the turn ends.
func TestALongReplyIsCutToTheEventTextLimit(t *testing.T) {
	f := startFleet(t)
	long := strings.Repeat("é", events.DefaultTextLimit) // 2 bytes a rune: twice the limit
	payload, err := json.Marshal(map[string]any{"session_id": "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", "prompt_id": "p2", "hook_event_name": "Stop", "last_assistant_message": long})
	if err != nil {
		t.Fatal(err)
	}
	if stderr, err := run(t, "stop", string(payload), paneEnv(f.url, t.TempDir())); err != nil {
		t.Fatalf("Run: %v (%s)", err, stderr)
	}
	evs := f.agentEvents(t)
	if len(evs) != 2 {
		t.Fatalf("appended %d events, want replied and status", len(evs))
	}
	r, ok := evs[0].Data.(events.AgentReplied)
	if !ok {
		t.Fatalf("first event %T", evs[0].Data)
	}
	if len(r.Reply) > events.DefaultTextLimit || !strings.HasPrefix(r.Reply, "éé") || !utf8.ValidString(r.Reply) ||
		!strings.HasSuffix(r.Reply, "the transcript has the whole text]") {
		t.Errorf("reply of %d bytes, valid UTF-8 %v, ends %q", len(r.Reply), utf8.ValidString(r.Reply), r.Reply[len(r.Reply)-80:])
	}
	if got := fitText("short"); got != "short" {
		t.Errorf("fitText(short) = %q", got)
	}
}

// Under `fleetd auth`, a pane's hooks run with the agent's own key: every
// hook's events are appended (the acks come back on the agent's own inbox
// prefix, the only one it may subscribe to) and correlated with its
// roster row, with nothing spooled and no permission refused.
func TestRunWithTheAgentsOwnKey(t *testing.T) {
	srv, dir := fleettest.StartAuth(t, natsauth.Fleet{Hosts: map[string][]string{"h1": {agent}}})
	f := fleetOn(srv)
	f.putRosterRow(t, `{"current_turn":"`+currentTurn+`"}`)
	spool := t.TempDir()
	env := paneEnv(f.url, spool, "FLEET_NATS_CREDS", natsauth.AgentCreds(filepath.Join(dir, "gateway-h1.nk"), agent))
	for _, hook := range []string{"session-start", "user-prompt-submit", "stop", "stop-failure", "notification", "session-end"} {
		stderr, err := run(t, hook, payloads[mustParse(t, hook)], env)
		if err != nil || strings.Contains(stderr, "NATS unavailable") || strings.Contains(stderr, "ermission") {
			t.Errorf("hook %s: %v\n%s", hook, err, stderr)
		}
	}
	got := f.agentEvents(t)
	if len(got) != 10 {
		t.Errorf("got %d events, want 10", len(got))
	}
	assertCorrelated(t, got)
}

// With a token server (`fleetd up --token`), the hooks authenticate with
// FLEET_NATS_TOKEN; without it they cannot connect and spool.
func TestRunWithTheNATSToken(t *testing.T) {
	f := startFleet(t, natstest.WithClientOptions(nats.Token("s3cret")),
		natstest.WithConfig(func(c *embeddednats.Config) { c.Token = "s3cret" }))
	spool := t.TempDir()
	stderr, err := run(t, "stop", payloads[Stop], paneEnv(f.url, spool))
	if err != nil || !strings.Contains(stderr, "NATS unavailable") {
		t.Errorf("without the token: %v, %q; want the events spooled", err, stderr)
	}
	stderr, err = run(t, "stop", payloads[Stop], paneEnv(f.url, spool, "FLEET_NATS_TOKEN", "s3cret"))
	if err != nil || strings.Contains(stderr, "NATS unavailable") {
		t.Errorf("with the token: %v, %q", err, stderr)
	}
	if got := f.agentEvents(t); len(got) != 4 {
		t.Errorf("got %d events, want the spooled 2 and the new 2", len(got))
	}
}

func mustParse(t *testing.T, hook string) Hook {
	t.Helper()
	h, err := ParseHook(hook)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A spooled event replayed after the stream's dedupe window (here one
// second) is still stored once: the replay finds its id in the log. Before,
// JetStream's dedupe alone guarded the replay, and a late one stored the
// event twice.
func TestReplayAfterTheDedupeWindowStoresOnce(t *testing.T) {
	spool := t.TempDir()
	if _, err := run(t, "stop", payloads[Stop], paneEnv(deadURL(t), spool)); err != nil {
		t.Fatal(err)
	}
	saved := copyDir(t, spool)
	srv := natstest.Start(t, natstest.WithTCP())
	ctx := context.Background()
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{Duplicates: time.Second}); err != nil {
		t.Fatal(err)
	}
	log := events.New(srv.JS, events.Options{})
	f := fleet{srv: srv, log: log, url: srv.ClientURL()}
	if n, err := ReplaySpool(ctx, log, spool); n != 2 || err != nil {
		t.Fatalf("ReplaySpool = %d, %v; want 2, nil", n, err)
	}
	want := []events.Type{events.TypeAgentReplied, events.TypeAgentStatus}
	assertTypes(t, f.agentEvents(t), want)

	// Wait out the dedupe window: a probe appended after the replay is no
	// longer deduplicated, so neither are the replayed events.
	probe := events.Event{ID: events.NewULIDSource(time.Now)(), Subject: "probe", Data: events.HostUp{Host: "probe"}}
	if _, err := log.Append(ctx, probe); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		ack, err := log.Append(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate {
			return errors.New("the dedupe window never passed")
		}
		return nil
	})

	replayAgain(t, f, spool, saved, want)
}

// A hook replays only what the dedupe window still guards (an agent's NATS
// identity may not read the log to check the rest); an older spooled event
// stays, in order, for the gateway's Replayer, which stores it once.
func TestAHookLeavesOldSpooledEventsToTheGateway(t *testing.T) {
	spool := t.TempDir()
	long := time.Now().Add(-10 * time.Minute)
	err := Run(context.Background(), "stop", strings.NewReader(payloads[Stop]), paneEnv(deadURL(t), spool),
		Options{Stderr: io.Discard, NoHerdr: true, Now: func() time.Time { return long }})
	if err != nil {
		t.Fatal(err)
	}
	f := startFleet(t)
	stderr, err := run(t, "session-end", payloads[SessionEnd], paneEnv(f.url, spool))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "replayed") {
		t.Errorf("the hook replayed events older than the dedupe window: %q", stderr)
	}
	assertTypes(t, f.agentEvents(t), []events.Type{events.TypeAgentSession})
	if files, _ := pending(spool); len(files) != 2 {
		t.Fatalf("spool holds %d files, want the 2 old ones", len(files))
	}
	if n, err := ReplaySpool(context.Background(), f.log, spool); n != 2 || err != nil {
		t.Fatalf("gateway replay = %d, %v", n, err)
	}
	assertTypes(t, f.agentEvents(t), []events.Type{events.TypeAgentSession, events.TypeAgentReplied, events.TypeAgentStatus})
}

// A NATS that takes the connection and never says a word (a wedged
// server, a port some other program holds) costs the hook its 300 ms
// connect bound, not its whole timeout: the events are spooled.
func TestASilentNATSSpoolsWithinTheConnectBound(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn // silent until the listener closes
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	spool := t.TempDir()
	start := time.Now()
	var stderr bytes.Buffer
	if err := Run(context.Background(), "user-prompt-submit", strings.NewReader(payloads[UserPromptSubmit]), paneEnv("nats://"+l.Addr().String(), spool),
		Options{Stderr: &stderr, NoHerdr: true, Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("Run = %v, want nil (spooled)", err)
	}
	// 300 ms bound the dial and handshake; the rest is slack for a loaded
	// machine, far below the 5 s the hook would otherwise wait.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a silent NATS held the hook %v, want ~300 ms", took)
	}
	if !strings.Contains(stderr.String(), "spooled 2 event(s)") {
		t.Errorf("stderr = %q, want a note about spooling", stderr.String())
	}
	if files, err := pending(spool); err != nil || len(files) != 2 {
		t.Errorf("spool holds %d files (%v), want 2", len(files), err)
	}
}
