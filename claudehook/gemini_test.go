package claudehook

import (
	"fmt"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventcore"
)

// The session file is the real Gemini CLI 0.61.0's, two turns against the
// fake API: the last turn is read, each message's latest version once.
func TestReadGeminiUsageReadsTheLastTurn(t *testing.T) {
	u, err := ReadGeminiUsage("testdata/gemini-session.jsonl", "", 0)
	want := eventcore.Tokens{In: 12878, Out: 7}
	if err != nil || !u.Found || !u.Ended || u.Tokens != want || u.Model != "gemini-2.5-flash" || u.Reply != "ECHO: first line\nsecond line" {
		t.Errorf("usage %+v, %v; want %+v and the whole reply", u, err, want)
	}
}

// Gemini's hooks (their payloads are the real CLI's, the transcript path
// pointed at the test's copy) go through the same hook: BeforeAgent as
// user-prompt-submit (or by its own name), AfterAgent as stop, whose reply
// comes whole from the session file, not from prompt_response, which
// 0.61.0 builds by joining the streamed chunks with spaces.
func TestRunTakesGeminisHooks(t *testing.T) {
	f := startFleet(t)
	const (
		session = "6b1d2c3e-4444-4555-8666-777788889999"
		base    = `"session_id":"` + session + `","transcript_path":"testdata/gemini-session.jsonl","cwd":"/tmp/gem/work"`
	)
	env := paneEnv(f.url, t.TempDir(), "FLEET_KIND", "gemini")
	tests := []struct {
		arg, payload string
		want         events.Data
	}{
		{"session-start", `{` + base + `,"hook_event_name":"SessionStart","timestamp":"2026-12-03T19:51:28.570Z","source":"startup"}`,
			events.AgentSession{SessionID: session, State: "started", Source: "startup", TranscriptPath: "testdata/gemini-session.jsonl", Cwd: "/tmp/gem/work"}},
		{"before-agent", `{` + base + `,"hook_event_name":"BeforeAgent","timestamp":"2026-12-03T19:51:34.855Z","prompt":"first line\nsecond line"}`,
			events.AgentSubmitted{Via: "hook", SessionID: session, Prompt: "first line\nsecond line"}},
		{"stop", `{` + base + `,"hook_event_name":"AfterAgent","timestamp":"2026-12-03T19:51:35.108Z","prompt":"first line\nsecond line","prompt_response":"ECHO: first line\nsecond line st line\ns econd line","stop_hook_active":false}`,
			events.AgentReplied{Reply: "ECHO: first line\nsecond line", SessionID: session, Model: "gemini-2.5-flash",
				Tokens: events.Tokens{In: 12878, Out: 7}, Transcript: "testdata/gemini-session.jsonl"}},
	}
	for _, tt := range tests {
		if stderr, err := run(t, tt.arg, tt.payload, env); err != nil {
			t.Fatalf("%s: %v (stderr %q)", tt.arg, err, stderr)
		}
		all := f.agentEvents(t)
		var got events.Data
		for _, ev := range all {
			if fmt.Sprintf("%T", ev.Data) == fmt.Sprintf("%T", tt.want) {
				got = ev.Data
			}
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tt.want) {
			t.Errorf("%s: %#v\nwant %#v", tt.arg, got, tt.want)
		}
	}
	// Without the session file, the payload's reply stands.
	p, err := ParsePayload([]byte(`{"session_id":"` + session + `","hook_event_name":"AfterAgent","prompt":"hi","prompt_response":"ECHO: hi"}`))
	if err != nil || p.LastAssistantMessage != "ECHO: hi" || p.Prompt != "hi" {
		t.Errorf("payload %+v, %v", p, err)
	}
	if h, err := ParseHook("AfterAgent"); err != nil || h != Stop {
		t.Errorf("ParseHook(AfterAgent) = %v, %v", h, err)
	}
}
