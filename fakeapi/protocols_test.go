package fakeapi_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/fakeapi"
)

// frame is one raw server-sent event: its event name (empty for data-only
// frames) and its data line.
type frame struct {
	Event, Data string
}

// readFrames parses an SSE body; bufio's line splitting drops the \r of
// Gemini's \r\n line ends.
func readFrames(t *testing.T, r io.Reader) []frame {
	t.Helper()
	var out []frame
	var cur frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		case line == "":
			out = append(out, cur)
			cur = frame{}
		}
	}
	return out
}

func (f frame) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		t.Fatalf("frame %q: bad data %q: %v", f.Event, f.Data, err)
	}
	return m
}

// path walks nested maps and arrays: path(m, "choices", 0, "delta").
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }

// streamed is what a test reads back from one protocol's stream: the
// sequence of frame kinds, the reassembled text and the usage numbers.
type streamed struct {
	seq   []string
	text  string
	usage map[string]any
}

func readResponses(t *testing.T, fs []frame) streamed {
	var out streamed
	for i, f := range fs {
		m := f.json(t)
		if m["type"] != f.Event {
			t.Errorf("event %s carries type %v", f.Event, m["type"])
		}
		if got := m["sequence_number"]; got != float64(i) {
			t.Errorf("event %d (%s): sequence_number %v", i, f.Event, got)
		}
		out.seq = append(out.seq, f.Event)
		switch f.Event {
		case "response.output_text.delta":
			out.text += str(m["delta"])
		case "response.completed":
			out.usage, _ = path(m, "response", "usage").(map[string]any)
		}
	}
	return out
}

func readChat(t *testing.T, fs []frame) streamed {
	var out streamed
	for _, f := range fs {
		if f.Event != "" {
			t.Errorf("chat frame with event %q, want data-only", f.Event)
		}
		if f.Data == "[DONE]" {
			out.seq = append(out.seq, "[DONE]")
			continue
		}
		m := f.json(t)
		delta, _ := path(m, "choices", 0, "delta").(map[string]any)
		kind := "content"
		switch {
		case delta["role"] == "assistant":
			kind = "role"
		case path(m, "choices", 0, "finish_reason") != nil:
			kind = "finish:" + str(path(m, "choices", 0, "finish_reason"))
			out.usage, _ = m["usage"].(map[string]any)
		}
		out.seq = append(out.seq, kind)
		out.text += str(delta["content"])
	}
	return out
}

func readGemini(t *testing.T, fs []frame) streamed {
	var out streamed
	for _, f := range fs {
		m := f.json(t)
		kind := "text"
		if r := path(m, "candidates", 0, "finishReason"); r != nil {
			kind += "+" + str(r)
		}
		if u, ok := m["usageMetadata"].(map[string]any); ok {
			kind += "+usage"
			out.usage = u
		}
		out.seq = append(out.seq, kind)
		out.text += str(path(m, "candidates", 0, "content", "parts", 0, "text"))
	}
	return out
}

func TestEachProtocolStreamsTheEchoWithItsOwnEventsAndUsage(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		body      map[string]any
		read      func(*testing.T, []frame) streamed
		wantSeq   []string
		wantUsage []string
		protocol  fakeapi.Protocol
		model     string
	}{
		{"anthropic messages", "/v1/messages", userText("hello there, fake", true),
			func(t *testing.T, fs []frame) streamed {
				var out streamed
				for _, f := range fs {
					m := f.json(t)
					out.seq = append(out.seq, f.Event)
					out.text += str(path(m, "delta", "text"))
					if u, ok := m["usage"].(map[string]any); ok && f.Event == "message_delta" {
						out.usage = u
					}
				}
				return out
			},
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
				"content_block_delta", "content_block_stop", "message_delta", "message_stop"},
			[]string{"input_tokens", "output_tokens"}, fakeapi.ProtocolAnthropic, "claude-test-1"},
		{"openai responses", "/v1/responses", map[string]any{"model": "gpt-test", "stream": true, "store": false,
			"input": []any{map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": "hello there, fake"}}}}},
			readResponses,
			[]string{"response.created", "response.in_progress", "response.output_item.added",
				"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done",
				"response.output_item.done", "response.completed"},
			[]string{"input_tokens", "output_tokens", "total_tokens"}, fakeapi.ProtocolResponses, "gpt-test"},
		{"openai chat completions", "/v1/chat/completions", map[string]any{"model": "gpt-test", "stream": true,
			"messages": []any{map[string]any{"role": "user", "content": "hello there, fake"}}},
			readChat,
			[]string{"role", "content", "content", "content", "finish:stop", "[DONE]"},
			[]string{"prompt_tokens", "completion_tokens", "total_tokens"}, fakeapi.ProtocolChat, "gpt-test"},
		{"gemini streamGenerateContent", "/v1beta/models/gemini-test:streamGenerateContent?alt=sse", map[string]any{
			"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hello there, fake"}}}}},
			readGemini,
			[]string{"text", "text", "text+STOP+usage"},
			[]string{"promptTokenCount", "candidatesTokenCount", "totalTokenCount"}, fakeapi.ProtocolGemini, "gemini-test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapi.Start(t)
			resp := post(t, t.Context(), s, tt.path, tt.body)
			if got, want := resp.Header.Get("Content-Type"), "text/event-stream"; !strings.HasPrefix(got, want) {
				t.Fatalf("content type = %q, want %q", got, want)
			}
			got := tt.read(t, readFrames(t, resp.Body))
			if !slices.Equal(got.seq, tt.wantSeq) {
				t.Errorf("frames =\n  %s\nwant\n  %s", strings.Join(got.seq, " "), strings.Join(tt.wantSeq, " "))
			}
			if want := "ECHO: hello there, fake"; got.text != want {
				t.Errorf("text = %q, want %q", got.text, want)
			}
			for _, k := range tt.wantUsage {
				if n, _ := got.usage[k].(float64); n < 1 {
					t.Errorf("usage %s = %v, want > 0 (usage %v)", k, got.usage[k], got.usage)
				}
			}
			r := s.Requests()[0]
			if r.Protocol != tt.protocol || r.Prompt != "hello there, fake" || r.Model != tt.model || !r.Stream || r.Rule != "echo" {
				t.Errorf("recorded %s prompt=%q model=%q stream=%v rule=%q, want %s %q %q true echo",
					r.Protocol, r.Prompt, r.Model, r.Stream, r.Rule, tt.protocol, "hello there, fake", tt.model)
			}
		})
	}
}

// TestGeminiStreamsFramesLikeGoogle: \r\n\r\n ends each frame, as the real
// API's did when Gemini CLI 0.61.0 was verified.
func TestGeminiStreamsFramesLikeGoogle(t *testing.T) {
	s := fakeapi.Start(t)
	resp := post(t, t.Context(), s, "/v1beta/models/m:streamGenerateContent?alt=sse", map[string]any{
		"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}})
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(b), "data: {") || !strings.HasSuffix(string(b), "}\r\n\r\n") {
		t.Errorf("body = %q, want data frames ended by \\r\\n\\r\\n", b)
	}
}

func TestEachProtocolAnswersJSONWhenNotStreaming(t *testing.T) {
	user := func(text string) map[string]any {
		return map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}
	}
	tests := []struct {
		name  string
		path  string
		body  map[string]any
		text  []any // path to the reply text
		usage []any // path to a usage number
	}{
		{"responses", "/v1/responses", map[string]any{"model": "m", "input": "plain please"},
			[]any{"output", 0, "content", 0, "text"}, []any{"usage", "total_tokens"}},
		{"chat completions", "/v1/chat/completions", map[string]any{"model": "m",
			"messages": []any{map[string]any{"role": "user", "content": "plain please"}}},
			[]any{"choices", 0, "message", "content"}, []any{"usage", "completion_tokens"}},
		{"gemini generateContent", "/v1beta/models/m:generateContent", map[string]any{
			"contents": []any{user("plain please")}},
			[]any{"candidates", 0, "content", "parts", 0, "text"}, []any{"usageMetadata", "totalTokenCount"}},
		{"gemini streamGenerateContent without alt=sse is a JSON array", "/v1beta/models/m:streamGenerateContent",
			map[string]any{"contents": []any{user("plain please")}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapi.Start(t)
			resp := post(t, t.Context(), s, tt.path, tt.body)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type = %q, want application/json", ct)
			}
			if tt.text == nil {
				var frames []map[string]any
				if err := json.NewDecoder(resp.Body).Decode(&frames); err != nil {
					t.Fatal(err)
				}
				var text strings.Builder
				for _, f := range frames {
					text.WriteString(str(path(f, "candidates", 0, "content", "parts", 0, "text")))
				}
				if got, want := text.String(), "ECHO: plain please"; got != want || len(frames) < 2 {
					t.Errorf("array of %d frames with text %q, want several with %q", len(frames), got, want)
				}
				return
			}
			m := decode(t, resp)
			if got, want := path(m, tt.text...), "ECHO: plain please"; got != want {
				t.Errorf("text = %v, want %v", got, want)
			}
			if n, _ := path(m, tt.usage...).(float64); n < 1 {
				t.Errorf("usage = %v, want > 0", path(m, tt.usage...))
			}
			if r := s.Requests()[0]; r.Prompt != "plain please" || r.Stream {
				t.Errorf("recorded prompt %q stream %v, want %q false", r.Prompt, r.Stream, "plain please")
			}
		})
	}
}

// protocolCase sends a prompt in one protocol, for the tests that run the
// same markers through every protocol.
type protocolCase struct {
	name string
	path string
	body func(prompt string) map[string]any
	// errorType is where the protocol's error JSON names the error.
	errorType []any
	want429   string
}

var protocolCases = []protocolCase{
	{"anthropic", "/v1/messages", func(p string) map[string]any { return userText(p, false) },
		[]any{"error", "type"}, "rate_limit_error"},
	{"responses", "/v1/responses", func(p string) map[string]any {
		return map[string]any{"model": "m", "input": []any{map[string]any{"role": "user", "content": p}}}
	}, []any{"error", "code"}, "rate_limit_exceeded"},
	{"chat", "/v1/chat/completions", func(p string) map[string]any {
		return map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": p}}}
	}, []any{"error", "code"}, "rate_limit_exceeded"},
	{"gemini", "/v1beta/models/m:generateContent", func(p string) map[string]any {
		return map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": p}}}}}
	}, []any{"error", "status"}, "RESOURCE_EXHAUSTED"},
}

func TestMarkersMeanTheSameInEveryProtocol(t *testing.T) {
	for _, pc := range protocolCases {
		t.Run(pc.name, func(t *testing.T) {
			s := fakeapi.Start(t)

			start := time.Now()
			resp := post(t, t.Context(), s, pc.path, pc.body("slow [delay=150ms]"))
			if got, want := time.Since(start), 150*time.Millisecond; got < want || resp.StatusCode != http.StatusOK {
				t.Errorf("answered %s after %v, want 200 after at least %v", resp.Status, got, want)
			}

			resp = post(t, t.Context(), s, pc.path, pc.body("fail [status=429]"))
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("status = %s, want 429", resp.Status)
			}
			if got := path(decode(t, resp), pc.errorType...); got != pc.want429 {
				t.Errorf("error %v = %v, want %v", pc.errorType, got, pc.want429)
			}

			var codes []int
			for range 3 {
				codes = append(codes, post(t, t.Context(), s, pc.path, pc.body("flaky [status=503x2]")).StatusCode)
			}
			if want := []int{503, 503, 200}; !slices.Equal(codes, want) {
				t.Errorf("statuses = %v, want %v", codes, want)
			}
			var rules []string
			for _, r := range s.Requests() {
				rules = append(rules, r.Rule)
			}
			if want := []string{"echo", "status", "status", "status", "echo"}; !slices.Equal(rules, want) {
				t.Errorf("rules = %v, want %v", rules, want)
			}
		})
	}
}

func TestToolMarkerCallsAFunctionInEveryProtocolAndTheResultIsEchoed(t *testing.T) {
	const prompt = "run it [tool=Bash:echo hi]"
	tests := []struct {
		name string
		path string
		// first is the request carrying the prompt.
		first map[string]any
		// call reads the tool call from the answer: id, name, arguments.
		call func(t *testing.T, resp *http.Response) (string, string, string)
		// next is the request carrying the tool's result "hi".
		next func(id, name, args string) map[string]any
		// text reads the final answer's text.
		text []any
	}{
		{"responses", "/v1/responses",
			map[string]any{"model": "m", "stream": true, "input": []any{map[string]any{"role": "user", "content": prompt}}},
			func(t *testing.T, resp *http.Response) (string, string, string) {
				var item map[string]any
				var args string
				for _, f := range readFrames(t, resp.Body) {
					m := f.json(t)
					switch f.Event {
					case "response.function_call_arguments.delta":
						args += str(m["delta"])
					case "response.output_item.done":
						item = m["item"].(map[string]any)
					}
				}
				if item["type"] != "function_call" || item["arguments"] != args {
					t.Errorf("item %v, want a function_call whose arguments the deltas spell (%s)", item, args)
				}
				return str(item["call_id"]), str(item["name"]), args
			},
			func(id, name, args string) map[string]any {
				return map[string]any{"model": "m", "input": []any{
					map[string]any{"role": "user", "content": prompt},
					map[string]any{"type": "function_call", "call_id": id, "name": name, "arguments": args},
					map[string]any{"type": "function_call_output", "call_id": id, "output": "hi"},
				}}
			},
			[]any{"output", 0, "content", 0, "text"}},
		{"chat", "/v1/chat/completions",
			map[string]any{"model": "m", "stream": true, "messages": []any{map[string]any{"role": "user", "content": prompt}}},
			func(t *testing.T, resp *http.Response) (string, string, string) {
				var id, name, args, finish string
				for _, f := range readFrames(t, resp.Body) {
					if f.Data == "[DONE]" {
						continue
					}
					m := f.json(t)
					if tc, ok := path(m, "choices", 0, "delta", "tool_calls", 0).(map[string]any); ok {
						id, name = id+str(tc["id"]), name+str(path(tc, "function", "name"))
						args += str(path(tc, "function", "arguments"))
					}
					if r := path(m, "choices", 0, "finish_reason"); r != nil {
						finish = str(r)
					}
				}
				if finish != "tool_calls" {
					t.Errorf("finish_reason = %q, want tool_calls", finish)
				}
				return id, name, args
			},
			func(id, name, args string) map[string]any {
				return map[string]any{"model": "m", "messages": []any{
					map[string]any{"role": "user", "content": prompt},
					map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": id, "type": "function",
						"function": map[string]any{"name": name, "arguments": args}}}},
					map[string]any{"role": "tool", "tool_call_id": id, "content": "hi"},
				}}
			},
			[]any{"choices", 0, "message", "content"}},
		{"gemini", "/v1beta/models/m:streamGenerateContent?alt=sse",
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}},
			func(t *testing.T, resp *http.Response) (string, string, string) {
				for _, f := range readFrames(t, resp.Body) {
					if fc, ok := path(f.json(t), "candidates", 0, "content", "parts", 0, "functionCall").(map[string]any); ok {
						args, _ := json.Marshal(fc["args"])
						return "", str(fc["name"]), string(args)
					}
				}
				t.Error("no functionCall part")
				return "", "", ""
			},
			func(_, name, args string) map[string]any {
				return map[string]any{"contents": []any{
					map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}},
					map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{
						"name": name, "args": json.RawMessage(args)}}}},
					map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
						"name": name, "response": map[string]any{"output": "hi"}}}}},
				}}
			},
			[]any{"candidates", 0, "content", "parts", 0, "text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapi.Start(t)
			id, name, args := tt.call(t, post(t, t.Context(), s, tt.path, tt.first))
			var in map[string]string
			if err := json.Unmarshal([]byte(args), &in); err != nil || name != "Bash" || in["command"] != "echo hi" {
				t.Fatalf("tool call %s %s (%v), want Bash with command echo hi", name, args, err)
			}
			if tt.name != "gemini" && !strings.HasPrefix(id, "call_") {
				t.Errorf("call id = %q, want a call_ id", id)
			}
			path := strings.Replace(tt.path, "streamGenerateContent?alt=sse", "generateContent", 1)
			m := decode(t, post(t, t.Context(), s, path, tt.next(id, name, args)))
			if got, want := str(pathOf(m, tt.text)), prompt; got != "ECHO: "+want+"\nTOOL_RESULT: hi" {
				t.Errorf("text = %q, want the echo and the tool result", got)
			}
			if r := s.Requests()[1]; r.Prompt != prompt || len(r.ToolResults) != 1 || r.ToolResults[0].Text != "hi" {
				t.Errorf("recorded prompt %q results %v, want the prompt and one result hi", r.Prompt, r.ToolResults)
			}
		})
	}
}

func pathOf(v any, keys []any) any { return path(v, keys...) }

func TestSideEndpointsAnswerGenerically(t *testing.T) {
	s := fakeapi.Start(t)
	get := func(p string) map[string]any {
		resp, err := http.Get(s.URL() + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return decode(t, resp)
	}
	m := get("/v1/models")
	if m["object"] != "list" || path(m, "data", 0, "object") != "model" || path(m, "data", 0, "type") != "model" {
		t.Errorf("GET /v1/models = %v, want a list in OpenAI's and Anthropic's shape", m)
	}
	if got := str(path(get("/v1beta/models"), "models", 0, "name")); !strings.HasPrefix(got, "models/") {
		t.Errorf("GET /v1beta/models first name = %q, want models/…", got)
	}
	m = decode(t, post(t, t.Context(), s, "/v1beta/models/m:countTokens", map[string]any{
		"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "count me"}}}}}))
	if n, _ := m["totalTokens"].(float64); n < 1 {
		t.Errorf("countTokens = %v, want totalTokens > 0", m)
	}
	if r := s.Requests()[2]; r.Protocol != fakeapi.ProtocolGemini || r.Prompt != "count me" || r.Model != "m" || r.Rule != "" {
		t.Errorf("countTokens recorded %s %q %q rule %q, want gemini, its prompt, no rule", r.Protocol, r.Prompt, r.Model, r.Rule)
	}
}

func TestACompressedBodyIsReadAsSent(t *testing.T) {
	s := fakeapi.Start(t)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"model":"m","input":"zipped"}`))
	_ = zw.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/v1/responses", &buf)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := str(path(decode(t, resp), "output", 0, "content", 0, "text")); got != "ECHO: zipped" {
		t.Errorf("text = %q, want ECHO: zipped", got)
	}
	if got := string(s.Requests()[0].Body); got != `{"model":"m","input":"zipped"}` {
		t.Errorf("recorded body = %q, want it decompressed", got)
	}
}
