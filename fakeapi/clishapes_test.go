package fakeapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/fakeapi"
)

// Request bodies shaped like those the agent CLIs sent to the Python fakes in
// ../shared/agent-clis-verified.md (Codex 0.169.0 §1.2, OpenCode 1.18.33
// §2.2, Gemini CLI 0.61.0 §3.2), cut down to the parts that decide the
// prompt. Each is posted as raw JSON and the recorded request is checked.
func TestThePromptIsFoundInEachCLIsRequestShape(t *testing.T) {
	const codexPrefix = `{"model":"fake-model","instructions":"You are Codex, based on GPT-5.","stream":true,"store":false,
	 "tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"summary":"auto"},
	 "include":["reasoning.encrypted_content"],"prompt_cache_key":"01a23c91-dd51",
	 "tools":[{"type":"function","name":"shell","parameters":{}},{"type":"web_search"}],
	 "input":[
	  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>sandbox</permissions instructions>"}]},
	  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<collaboration_mode>default</collaboration_mode>"}]},
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe brief\n</INSTRUCTIONS>"}]},
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}`
	gemini := func(model, extra string, contents ...string) string {
		return `{"model":"` + model + `","contents":[` + strings.Join(contents, ",") + `],
		 "systemInstruction":{"role":"user","parts":[{"text":"You are Gemini CLI, an interactive CLI agent."}]},
		 "tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"read_file"}]}],
		 "generationConfig":{"temperature":1,"thinkingConfig":{"includeThoughts":true}` + extra + `}}`
	}
	const sessionContext = `{"role":"user","parts":[{"text":"<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Thursday.\n</session_context>"}]}`

	tests := []struct {
		name     string
		path     string
		body     string
		prompt   string
		rule     string
		reply    []any // path to the reply text in a JSON answer
		want     string
		system   string // a part of the recorded System
		attached []fakeapi.Attachment
	}{
		{"codex turn: developer, AGENTS.md and environment messages are skipped", "/v1/responses",
			codexPrefix + `,
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"hello one"}]}],"stream":false}`,
			"hello one", "echo", []any{"output", 0, "content", 0, "text"}, "ECHO: hello one", "You are Codex", nil},
		{"codex second turn: the history is replayed, the last user text wins", "/v1/responses",
			codexPrefix + `,
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"hello one"}]},
			  {"type":"reasoning","summary":[],"encrypted_content":"gAAAA"},
			  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"ECHO: hello one"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"paste line A\npaste line B"}]}],"stream":false}`,
			"paste line A\npaste line B", "echo", []any{"output", 0, "content", 0, "text"}, "ECHO: paste line A\npaste line B",
			"<collaboration_mode>", nil},
		{"codex title side call is auxiliary and ignores the quoted markers", "/v1/responses",
			`{"model":"fake-model","stream":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text",
			  "text":"Generate a concise, single-line task title of at most 36 characters for the following request.\nUser prompt:\nrun [tool=shell:x] [status=529] [delay=1h]"}]}]}`,
			"Generate a concise, single-line task title of at most 36 characters for the following request.\nUser prompt:\nrun [tool=shell:x] [status=529] [delay=1h]",
			"auxiliary", []any{"output", 0, "content", 0, "text"}, "ok", "", nil},
		{"gemini turn: the session context turn is skipped", "/v1beta/models/gemini-2.5-flash:generateContent",
			gemini("", "", sessionContext, `{"role":"model","parts":[{"text":"Got it. Thanks for the context!"}]}`,
				`{"role":"user","parts":[{"text":"hello one"}]}`),
			"hello one", "echo", []any{"candidates", 0, "content", "parts", 0, "text"}, "ECHO: hello one", "You are Gemini CLI", nil},
		{"gemini @file: the referenced files are attachments, not the prompt", "/v1beta/models/gemini-2.5-flash:generateContent",
			gemini("", "", sessionContext, `{"role":"user","parts":[{"text":"explain @notes.md"},
			  {"text":"\n--- Content from referenced files ---"},{"text":"\nContent from @notes.md:\n"},
			  {"text":"line one\nline two\n"},{"text":"\n--- End of content ---"}]}`),
			"explain @notes.md", "echo", []any{"candidates", 0, "content", "parts", 0, "text"}, "ECHO: explain @notes.md", "",
			[]fakeapi.Attachment{{Path: "notes.md", Text: "line one\nline two\n"}}},
		{"gemini router classifier gets JSON filling its upper-case schema", "/v1beta/models/gemini-3.5-flash-lite:generateContent",
			gemini("", `,"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{
			  "complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER"}},"required":["complexity_reasoning","complexity_score"]}`,
				`{"role":"user","parts":[{"text":"hard one [status=529] [delay=1h]"}]}`),
			"hard one [status=529] [delay=1h]", "auxiliary", []any{"candidates", 0, "content", "parts", 0, "text"},
			`{"complexity_reasoning":"fakeapi","complexity_score":0}`, "", nil},
		{"gemini session summary side call is auxiliary", "/v1beta/models/gemini-3.5-flash-lite:generateContent",
			gemini("", "", `{"role":"user","parts":[{"text":"Summarize the user's primary intent or goal in this conversation in ONE sentence (max 80 characters).\n\nuser: go [delay=1h]"}]}`),
			"Summarize the user's primary intent or goal in this conversation in ONE sentence (max 80 characters).\n\nuser: go [delay=1h]",
			"auxiliary", []any{"candidates", 0, "content", "parts", 0, "text"}, "ok", "", nil},
		{"opencode title side call over anthropic is auxiliary, though its prompt is the user's", "/v1/messages",
			`{"model":"fake-model","max_tokens":32000,"system":[{"type":"text","text":"You are a title generator."}],
			  "messages":[{"role":"user","content":[{"type":"text","text":"Generate a title for this conversation:\n"},
			  {"type":"text","text":"hello one [delay=1h]","cache_control":{"type":"ephemeral"}}]}]}`,
			"hello one [delay=1h]", "auxiliary", []any{"content", 0, "text"}, "ok", "title generator", nil},
		{"opencode turn over anthropic is an echo", "/v1/messages",
			`{"model":"fake-model","max_tokens":32000,"system":[{"type":"text","text":"You are opencode"}],"tool_choice":{"type":"auto"},
			  "tools":[{"name":"bash"}],"messages":[{"role":"user","content":[{"type":"text","text":"hello one","cache_control":{"type":"ephemeral"}}]}]}`,
			"hello one", "echo", []any{"content", 0, "text"}, "ECHO: hello one", "opencode", nil},
		{"chat completions: content parts, system message skipped", "/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"system","content":"You are helpful."},
			  {"role":"user","content":[{"type":"text","text":"hello one"},{"type":"image_url","image_url":{"url":"data:,"}}]}]}`,
			"hello one", "echo", []any{"choices", 0, "message", "content"}, "ECHO: hello one", "You are helpful.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapi.Start(t)
			if !json.Valid([]byte(tt.body)) {
				t.Fatalf("test body is not JSON: %s", tt.body)
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+tt.path, bytes.NewReader([]byte(tt.body)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %s, want 200", resp.Status)
			}
			if got := str(path(decode(t, resp), tt.reply...)); got != tt.want {
				t.Errorf("reply = %q, want %q", got, tt.want)
			}
			r := s.Requests()[0]
			if r.Prompt != tt.prompt || r.Rule != tt.rule {
				t.Errorf("recorded prompt %q rule %q, want %q %q", r.Prompt, r.Rule, tt.prompt, tt.rule)
			}
			if !strings.Contains(r.System, tt.system) {
				t.Errorf("recorded system %q, want it to contain %q", r.System, tt.system)
			}
			if len(r.Attached) != len(tt.attached) || (len(tt.attached) > 0 && r.Attached[0] != tt.attached[0]) {
				t.Errorf("attached %+v, want %+v", r.Attached, tt.attached)
			}
		})
	}
}
