package fakeapi

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Protocol names the provider wire format a request came in, so a rule or a
// test can tell a Codex turn from a Claude Code one.
type Protocol string

const (
	// ProtocolAnthropic is the Messages API, POST /v1/messages: Claude Code,
	// OpenCode and Pi.
	ProtocolAnthropic Protocol = "anthropic"
	// ProtocolResponses is OpenAI's Responses API, POST /v1/responses: Codex.
	ProtocolResponses Protocol = "responses"
	// ProtocolChat is OpenAI's Chat Completions API, POST
	// /v1/chat/completions: OpenAI-compatible providers.
	ProtocolChat Protocol = "chat"
	// ProtocolGemini is the Gemini API, POST
	// /v1beta/models/<model>:generateContent and :streamGenerateContent:
	// Gemini CLI.
	ProtocolGemini Protocol = "gemini"
)

// wire is one protocol's codec. It reads a request into the shared Call and
// writes the shared Reply back in the protocol's own shapes, so one rule
// engine answers every CLI and a marker means the same thing everywhere.
type wire interface {
	protocol() Protocol
	// decode reads a turn's request; the server fills Call.Protocol.
	decode(r *http.Request, body []byte) (Call, error)
	// reply writes a successful answer, streamed when c.Stream.
	reply(w http.ResponseWriter, c Call, r Reply)
	// fail writes an HTTP error in the protocol's error JSON.
	fail(w http.ResponseWriter, status int, msg string)
}

// serveTurn answers one model call of any protocol: decode, record, run the
// rules, wait out a delay, encode.
func (s *Server) serveTurn(w http.ResponseWriter, r *http.Request, p wire) {
	body, err := readBody(r)
	rec := s.newRequest(r, body)
	rec.Protocol = p.protocol()
	if err != nil {
		rec.Status = http.StatusBadRequest
		s.record(rec)
		p.fail(w, rec.Status, "read body: "+err.Error())
		return
	}
	call, err := p.decode(r, body)
	if err != nil {
		rec.Status = http.StatusBadRequest
		s.record(rec)
		p.fail(w, rec.Status, "invalid JSON body: "+err.Error())
		return
	}
	call.Protocol = p.protocol()
	rec.fill(call)

	rule, reply := s.answer(call)
	rec.Rule = rule
	rec.Status = http.StatusOK
	if reply.Status != 0 {
		rec.Status = reply.Status
	}
	s.record(rec)

	if !s.sleep(r.Context(), reply.Delay) {
		return
	}
	if rec.Status != http.StatusOK {
		p.fail(w, rec.Status, reply.Error)
		return
	}
	p.reply(w, call, reply)
}

// serveCount answers a token-count side call: recorded with its prompt, never
// seen by the rules, answered with body(estimate).
func (s *Server) serveCount(w http.ResponseWriter, r *http.Request, p wire, body func(tokens int) any) {
	raw, _ := readBody(r)
	rec := s.newRequest(r, raw)
	rec.Protocol = p.protocol()
	if call, err := p.decode(r, raw); err == nil {
		rec.Model, rec.Prompt = call.Model, call.Prompt
	}
	rec.Status = http.StatusOK
	s.record(rec)
	writeJSON(w, http.StatusOK, body(tokens(len(raw))))
}

// fill copies what a Call parsed into the record.
func (rec *Request) fill(c Call) {
	rec.Model, rec.Prompt, rec.Stream = c.Model, c.Prompt, c.Stream
	rec.MaxTokens, rec.System, rec.ToolResults, rec.Attached = c.MaxTokens, c.System, c.ToolResults, c.Attached
}

// readBody reads the request body, undoing a gzip or deflate
// Content-Encoding: SDKs may compress large bodies, and the fake records and
// parses what the client meant.
func readBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return raw, err
	}
	var zr io.ReadCloser
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "gzip":
		zr, err = gzip.NewReader(bytes.NewReader(raw))
	case "deflate":
		zr, err = zlib.NewReader(bytes.NewReader(raw))
	default:
		return raw, nil
	}
	if err != nil {
		return raw, fmt.Errorf("%s body: %w", r.Header.Get("Content-Encoding"), err)
	}
	defer zr.Close()
	out, err := io.ReadAll(zr)
	if err != nil {
		return raw, fmt.Errorf("%s body: %w", r.Header.Get("Content-Encoding"), err)
	}
	return out, nil
}

// anthropicWire is the Messages API, whose codec predates the others (call.go
// decodes, answer.go encodes).
type anthropicWire struct{ s *Server }

func (anthropicWire) protocol() Protocol { return ProtocolAnthropic }

func (anthropicWire) decode(_ *http.Request, body []byte) (Call, error) { return parseCall(body) }

func (a anthropicWire) reply(w http.ResponseWriter, c Call, r Reply) {
	if c.Stream {
		a.s.writeStream(w, c, r)
		return
	}
	writeJSON(w, http.StatusOK, a.s.message(c, r))
}

func (a anthropicWire) fail(w http.ResponseWriter, status int, msg string) {
	a.s.writeError(w, status, msg)
}

// injectedPrefixes start the context messages agent CLIs put among the user's
// messages: Codex's environment, AGENTS.md and permission blocks, Claude
// Code's reminders, Gemini CLI's session context. They are never the prompt.
var injectedPrefixes = []string{
	"<environment_context>",
	"<user_instructions>",
	"# AGENTS.md",
	"<INSTRUCTIONS>",
	"<permissions",
	systemReminder,
	"<session_context>",
	"This is the Gemini CLI. We are setting up the context",
}

func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// sideCallPrefixes start the instruction of a CLI's background call that
// quotes the user's prompt (and so its markers) but is not a turn: Codex's
// thread title, OpenCode's session title, Gemini CLI's session summary.
var sideCallPrefixes = []string{
	"Generate a concise, single-line task title",
	"Generate a title for this conversation",
	"Summarize the user's primary intent or goal in this conversation",
}

func sideCall(texts ...string) bool {
	for _, t := range texts {
		t = strings.TrimSpace(t)
		for _, p := range sideCallPrefixes {
			if strings.HasPrefix(t, p) {
				return true
			}
		}
	}
	return false
}

// turn is one message of a conversation in any protocol, reduced to what the
// prompt search needs.
type turn struct {
	role    string
	texts   []string
	results []ToolResult
}

// findPrompt is the prompt rule for the protocols other than Anthropic: the
// last text of a user message that is not injected context, the tool results
// that came after it, the index of its message (-1 for none) and whether
// that message is a side call's instruction.
func findPrompt(turns []turn) (prompt string, results []ToolResult, at int, side bool) {
	at = -1
	for i, t := range turns {
		if t.role == "user" {
			for _, text := range t.texts {
				if !injected(text) {
					prompt, results, at, side = text, nil, i, sideCall(t.texts...)
				}
			}
		}
		results = append(results, t.results...)
	}
	return prompt, results, at, side
}

// textsOf reads OpenAI content: a string, or an array of parts of which the
// text ones (text, input_text, output_text) count.
func textsOf(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []string{s}
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "", "text", "input_text", "output_text":
			if p.Text != nil {
				out = append(out, *p.Text)
			}
		}
	}
	return out
}

// replyTokens estimates a reply's output tokens from its text and tool call.
func replyTokens(r Reply) int {
	n := len(r.Text)
	if r.ToolUse != nil {
		n += len(r.ToolUse.Name) + len(r.ToolUse.Input)
	}
	return tokens(n)
}

// toolCall is a reply's tool call with its id and input filled in.
func (s *Server) toolCall(r Reply, prefix string) (id, name string, input json.RawMessage) {
	tu := r.ToolUse
	id, input = tu.ID, tu.Input
	if id == "" {
		id = s.cfg.NewID(prefix)
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return id, tu.Name, input
}

// sse writes server-sent events, flushing each so a client sees the reply
// arrive in pieces as from a real model.
type sse struct {
	w     http.ResponseWriter
	f     http.Flusher
	crlf  bool // end frames with \r\n\r\n, as Google's servers do
	count int
}

func (s *Server) startSSE(w http.ResponseWriter, crlf bool) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", s.cfg.NewID("req_"))
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, crlf: crlf}
}

// send writes one frame; an empty name writes a data-only frame, and data
// that is not a string is marshalled as JSON.
func (e *sse) send(name string, data any) {
	var payload []byte
	if str, ok := data.(string); ok {
		payload = []byte(str)
	} else {
		payload, _ = json.Marshal(data)
	}
	end := "\n\n"
	if e.crlf {
		end = "\r\n\r\n"
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s%s", payload, end)
	e.count++
	if e.f != nil {
		e.f.Flush()
	}
}
