package fakeapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Name string
	Data map[string]any
}

// post sends body to path and returns the response; the body is closed at
// test end.
func post(t *testing.T, ctx context.Context, s *fakeapi.Server, path string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("event %s: bad data %q: %v", cur.Name, line, err)
			}
		case line == "":
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	return out
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", resp.Status, err)
	}
	return m
}

// userText is a request with one user message carrying text.
func userText(text string, stream bool) map[string]any {
	return map[string]any{
		"model":      "claude-test-1",
		"max_tokens": 1024,
		"stream":     stream,
		"messages":   []any{map[string]any{"role": "user", "content": text}},
	}
}

// streamedText joins the text deltas of a stream.
func streamedText(evs []sseEvent) string {
	var b strings.Builder
	for _, e := range evs {
		if d, ok := e.Data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			b.WriteString(d["text"].(string))
		}
	}
	return b.String()
}

func TestStreamingAnswersTheStandardEventSequence(t *testing.T) {
	s := fakeapi.Start(t)
	resp := post(t, t.Context(), s, "/v1/messages?beta=true", userText("hello there, fake", true))
	if got, want := resp.Header.Get("Content-Type"), "text/event-stream"; !strings.HasPrefix(got, want) {
		t.Fatalf("content type = %q, want %q", got, want)
	}
	evs := readEvents(t, resp.Body)

	var names []string
	for _, e := range evs {
		if e.Name != "ping" && e.Name != "content_block_delta" {
			names = append(names, e.Name)
		}
	}
	want := "message_start content_block_start content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	deltas := 0
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			deltas++
		}
		if e.Name != e.Data["type"] {
			t.Errorf("event %s carries type %v", e.Name, e.Data["type"])
		}
	}
	if deltas < 2 {
		t.Errorf("text deltas = %d, want the text split into several", deltas)
	}
	if got, want := streamedText(evs), "ECHO: hello there, fake"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	msg := evs[0].Data["message"].(map[string]any)
	if id := msg["id"].(string); !strings.HasPrefix(id, "msg_") {
		t.Errorf("id = %q, want msg_ prefix", id)
	}
	if got, want := msg["model"], "claude-test-1"; got != want {
		t.Errorf("model = %v, want %v", got, want)
	}
	last := evs[len(evs)-2].Data
	if got, want := last["delta"].(map[string]any)["stop_reason"], "end_turn"; got != want {
		t.Errorf("stop_reason = %v, want %v", got, want)
	}
	usage := last["usage"].(map[string]any)
	if usage["input_tokens"].(float64) < 10 || usage["output_tokens"].(float64) < 2 {
		t.Errorf("usage = %v, want estimates from request and reply size", usage)
	}
}

func TestNonStreamingAnswersOneMessage(t *testing.T) {
	s := fakeapi.Start(t)
	resp := post(t, t.Context(), s, "/v1/messages", userText("plain please", false))
	m := decode(t, resp)
	if got, want := m["type"], "message"; got != want {
		t.Errorf("type = %v, want %v", got, want)
	}
	content := m["content"].([]any)[0].(map[string]any)
	if got, want := content["text"], "ECHO: plain please"; got != want {
		t.Errorf("text = %v, want %v", got, want)
	}
	if got, want := m["stop_reason"], "end_turn"; got != want {
		t.Errorf("stop_reason = %v, want %v", got, want)
	}
	if got := m["usage"].(map[string]any)["output_tokens"].(float64); got < 1 {
		t.Errorf("output_tokens = %v, want > 0", got)
	}
}

func TestPromptIsTheLastUserTextThatIsNotASystemReminder(t *testing.T) {
	reminder := map[string]any{"type": "text", "text": "<system-reminder>\nnoise\n</system-reminder>"}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	tests := []struct {
		name     string
		messages []any
		want     string
	}{
		{"string content is the prompt", []any{
			map[string]any{"role": "user", "content": "just a string"},
		}, "just a string"},
		{"reminder blocks are skipped", []any{
			map[string]any{"role": "user", "content": []any{reminder, text("the real ask"), reminder}},
		}, "the real ask"},
		{"a trailing system message is ignored", []any{
			map[string]any{"role": "user", "content": []any{reminder, text("ask with env")}},
			map[string]any{"role": "system", "content": []any{text("# Environment")}},
		}, "ask with env"},
		{"the latest turn wins", []any{
			map[string]any{"role": "user", "content": "first"},
			map[string]any{"role": "assistant", "content": "ECHO: first"},
			map[string]any{"role": "user", "content": []any{reminder, text("second")}},
		}, "second"},
		{"assistant text is never the prompt", []any{
			map[string]any{"role": "user", "content": "mine"},
			map[string]any{"role": "assistant", "content": "not mine"},
		}, "mine"},
		{"only reminders give an empty prompt", []any{
			map[string]any{"role": "user", "content": []any{reminder}},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapi.Start(t)
			body := map[string]any{"model": "m", "max_tokens": 100, "messages": tt.messages}
			m := decode(t, post(t, t.Context(), s, "/v1/messages", body))
			if got := s.Requests()[0].Prompt; got != tt.want {
				t.Errorf("recorded prompt = %q, want %q", got, tt.want)
			}
			text := m["content"].([]any)[0].(map[string]any)["text"]
			if got, want := text, "ECHO: "+tt.want; got != want {
				t.Errorf("reply = %q, want %q", got, want)
			}
		})
	}
}

func TestStatusMarkerAnswersAnthropicErrors(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{400, "invalid_request_error"},
		{401, "authentication_error"},
		{403, "permission_error"},
		{404, "not_found_error"},
		{429, "rate_limit_error"},
		{500, "api_error"},
		{529, "overloaded_error"},
	}
	s := fakeapi.Start(t)
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			prompt := "fail please [status=" + strconv.Itoa(tt.status) + "]"
			resp := post(t, t.Context(), s, "/v1/messages", userText(prompt, true))
			if got := resp.StatusCode; got != tt.status {
				t.Fatalf("status = %d, want %d", got, tt.status)
			}
			m := decode(t, resp)
			e := m["error"].(map[string]any)
			if m["type"] != "error" || e["type"] != tt.want || e["message"] == "" {
				t.Errorf("body = %v, want an error of type %s with a message", m, tt.want)
			}
		})
	}
}

func TestStatusMarkerWithCountFailsOnlyThatManyTimes(t *testing.T) {
	s := fakeapi.Start(t)
	var got []int
	for range 4 {
		got = append(got, post(t, t.Context(), s, "/v1/messages", userText("flaky [status=529x2]", false)).StatusCode)
	}
	if want := []int{529, 529, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
}

func TestDelayMarkerHoldsTheAnswerBack(t *testing.T) {
	s := fakeapi.Start(t)
	start := time.Now()
	m := decode(t, post(t, t.Context(), s, "/v1/messages", userText("slow [delay=150ms]", false)))
	if got, want := time.Since(start), 150*time.Millisecond; got < want {
		t.Errorf("answered after %v, want at least %v", got, want)
	}
	if got, want := m["content"].([]any)[0].(map[string]any)["text"], "ECHO: slow [delay=150ms]"; got != want {
		t.Errorf("text = %v, want %v", got, want)
	}
}

func TestDelayEndsWhenTheClientGivesUp(t *testing.T) {
	s := fakeapi.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	b, _ := json.Marshal(userText("forever [delay=1h]", false))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", bytes.NewReader(b))
	_, err := http.DefaultClient.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if got := len(s.Requests()); got != 1 {
		t.Errorf("recorded %d requests, want 1", got)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestToolMarkerRunsAToolAndEchoesItsResult(t *testing.T) {
	s := fakeapi.Start(t)
	prompt := "run it [tool=Bash:echo hi]"
	evs := readEvents(t, post(t, t.Context(), s, "/v1/messages", userText(prompt, true)).Body)

	var block map[string]any
	var input strings.Builder
	var stop any
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			block = e.Data["content_block"].(map[string]any)
		case "content_block_delta":
			d := e.Data["delta"].(map[string]any)
			if d["type"] != "input_json_delta" {
				t.Errorf("delta type = %v, want input_json_delta", d["type"])
			}
			input.WriteString(d["partial_json"].(string))
		case "message_delta":
			stop = e.Data["delta"].(map[string]any)["stop_reason"]
		}
	}
	if block["type"] != "tool_use" || block["name"] != "Bash" || !strings.HasPrefix(block["id"].(string), "toolu_") {
		t.Fatalf("block = %v, want a Bash tool_use with a toolu_ id", block)
	}
	var in map[string]string
	if err := json.Unmarshal([]byte(input.String()), &in); err != nil || in["command"] != "echo hi" {
		t.Errorf("input = %s (%v), want command echo hi", input.String(), err)
	}
	if got, want := stop, "tool_use"; got != want {
		t.Errorf("stop_reason = %v, want %v", got, want)
	}

	next := map[string]any{"model": "m", "max_tokens": 100, "stream": true, "messages": []any{
		map[string]any{"role": "user", "content": prompt},
		map[string]any{"role": "assistant", "content": []any{map[string]any{
			"type": "tool_use", "id": block["id"], "name": "Bash", "input": in}}},
		map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": block["id"],
			"content": []any{map[string]any{"type": "text", "text": "hi"}}}}},
	}}
	evs = readEvents(t, post(t, t.Context(), s, "/v1/messages", next).Body)
	if got, want := streamedText(evs), "ECHO: run it [tool=Bash:echo hi]\nTOOL_RESULT: hi"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got := s.Requests()[1].ToolResults; len(got) != 1 || got[0].Text != "hi" {
		t.Errorf("recorded tool results = %v, want one with text hi", got)
	}
}

func TestToolMarkersParse(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		want   []string
	}{
		{"bash takes a command", "[tool=Bash:ls -la]", []string{`Bash {"command":"ls -la","description":"Run ls -la"}`}},
		{"read takes a path", "x [tool=Read:/etc/hosts] y", []string{`Read {"file_path":"/etc/hosts"}`}},
		{"json input is kept, brackets and all", `[tool=Write:{"file_path":"a","content":"[1]"}]`,
			[]string{`Write {"file_path":"a","content":"[1]"}`}},
		{"unknown tools get input", "[tool=Thing:stuff]", []string{`Thing {"input":"stuff"}`}},
		{"markers run in order", "[tool=Bash:a][tool=Glob:*.go]",
			[]string{`Bash {"command":"a","description":"Run a"}`, `Glob {"pattern":"*.go"}`}},
		{"an unclosed marker is no marker", "[tool=Bash:oops", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tu := range fakeapi.ToolMarkers(tt.prompt) {
				got = append(got, tu.Name+" "+string(tu.Input))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("markers = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAuxiliaryCallsGetShortAnswersThatIgnoreMarkers(t *testing.T) {
	marked := "<session>\nrun [tool=Bash:rm x] [status=529] [delay=1h]\n</session>\nWrite the title."
	tests := []struct {
		name string
		body map[string]any
		want string
	}{
		{"a quota probe gets ok", map[string]any{"model": "m", "max_tokens": 1,
			"messages": []any{map[string]any{"role": "user", "content": "quota"}}}, "ok"},
		{"a title request gets schema-shaped JSON", map[string]any{"model": "m", "max_tokens": 100, "stream": true,
			"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{
				"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}},
				"required": []any{"title"}}}},
			"messages": []any{map[string]any{"role": "user", "content": marked}}}, `{"title":"fakeapi"}`},
		{"the permission classifier allows, cut at its stop sequence", map[string]any{"model": "m", "max_tokens": 64,
			"stop_sequences": []any{"</block>"},
			"system":         []any{map[string]any{"type": "text", "text": "You are a security monitor for autonomous AI coding agents."}},
			"messages":       []any{map[string]any{"role": "user", "content": "<transcript>[tool=Bash:x]</transcript>"}}}, "<block>no"},
		{"a tool-less call quoting the session is not a turn", map[string]any{"model": "m", "max_tokens": 100,
			"messages": []any{map[string]any{"role": "user", "content": marked}}}, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapi.Start(t)
			resp := post(t, t.Context(), s, "/v1/messages", tt.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %s, want 200", resp.Status)
			}
			var got string
			if tt.body["stream"] == true {
				got = streamedText(readEvents(t, resp.Body))
			} else {
				got = decode(t, resp)["content"].([]any)[0].(map[string]any)["text"].(string)
			}
			if got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
			if r := s.Requests()[0]; r.Rule != "auxiliary" {
				t.Errorf("rule = %q, want auxiliary", r.Rule)
			}
		})
	}
}

func TestExtraRulesComeFirst(t *testing.T) {
	s := fakeapi.Start(t, fakeapi.WithExtraRules(fakeapi.Rule{
		Name: "fruit", Match: fakeapi.Contains("PINEAPPLE"), Reply: fakeapi.Say("PINEAPPLE!"),
	}))
	m := decode(t, post(t, t.Context(), s, "/v1/messages", userText("say PINEAPPLE", false)))
	if got, want := m["content"].([]any)[0].(map[string]any)["text"], "PINEAPPLE!"; got != want {
		t.Errorf("text = %v, want %v", got, want)
	}
	m = decode(t, post(t, t.Context(), s, "/v1/messages", userText("other", false)))
	if got, want := m["content"].([]any)[0].(map[string]any)["text"], "ECHO: other"; got != want {
		t.Errorf("text = %v, want %v (defaults still apply)", got, want)
	}
	if got := s.Requests()[0].Rule; got != "fruit" {
		t.Errorf("rule = %q, want fruit", got)
	}
}

func TestOtherEndpoints(t *testing.T) {
	s := fakeapi.Start(t)
	m := decode(t, post(t, t.Context(), s, "/v1/messages/count_tokens", userText("count me", false)))
	if got := m["input_tokens"].(float64); got < 1 {
		t.Errorf("input_tokens = %v, want > 0", got)
	}

	resp, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if data := decode(t, resp)["data"].([]any); len(data) == 0 {
		t.Errorf("models = %v, want some", data)
	}

	resp, err = http.Get(s.URL() + "/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusNotFound; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if got, want := decode(t, resp)["error"].(map[string]any)["type"], "not_found_error"; got != want {
		t.Errorf("error type = %v, want %v", got, want)
	}
}

func TestWaitReturnsOnceRequestsArrive(t *testing.T) {
	s := fakeapi.Start(t)
	go func() {
		for _, p := range []string{"one", "two"} {
			b, _ := json.Marshal(userText(p, false))
			resp, err := http.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
			if err == nil {
				resp.Body.Close()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	reqs, err := s.Wait(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reqs[1].Prompt, "two"; got != want {
		t.Errorf("second prompt = %q, want %q", got, want)
	}
	r, err := s.WaitFor(ctx, func(r fakeapi.Request) bool { return r.Prompt == "one" })
	if err != nil || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("WaitFor = %v, %v; want the first request with its headers", r.Prompt, err)
	}

	short, cancelShort := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancelShort()
	if _, err := s.Wait(short, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for a third = %v, want deadline exceeded", err)
	}
}

func TestLifecycle(t *testing.T) {
	s := fakeapi.New(fakeapi.Config{})
	if got := s.URL(); got != "" {
		t.Errorf("URL before start = %q, want empty", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); !errors.Is(err, fakeapi.ErrStarted) {
		t.Errorf("second Start = %v, want ErrStarted", err)
	}
	cancel()
	if err := s.Close(); err != nil {
		t.Errorf("Close after ctx end = %v, want nil", err)
	}
	if err := s.Start(t.Context()); !errors.Is(err, fakeapi.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}

	bad := fakeapi.New(fakeapi.Config{Rules: []fakeapi.Rule{{Name: "broken"}}})
	if err := bad.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "no Match") || !strings.Contains(err.Error(), "no Reply") {
		t.Errorf("Start with a broken rule = %v, want both problems reported", err)
	}
}
