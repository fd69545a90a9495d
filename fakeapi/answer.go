package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// usage is the Messages API token accounting; the fake estimates one token
// per four bytes, so transcripts carry plausible counts.
type usage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

type block struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
}

func tokens(bytes int) int { return max(1, bytes/4) }

// blocks turns a reply into content blocks, giving a tool_use an id.
func (s *Server) blocks(r Reply) []block {
	var out []block
	if r.Text != "" || r.ToolUse == nil {
		text := r.Text
		out = append(out, block{Type: "text", Text: &text})
	}
	if tu := r.ToolUse; tu != nil {
		id, input := tu.ID, tu.Input
		if id == "" {
			id = s.cfg.NewID("toolu_")
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		out = append(out, block{Type: "tool_use", ID: id, Name: tu.Name, Input: input})
	}
	return out
}

func stopReason(r Reply) string {
	switch {
	case r.StopReason != "":
		return r.StopReason
	case r.ToolUse != nil:
		return "tool_use"
	default:
		return "end_turn"
	}
}

func outputTokens(bs []block) int {
	n := 0
	for _, b := range bs {
		if b.Text != nil {
			n += len(*b.Text)
		}
		n += len(b.Name) + len(b.Input)
	}
	return tokens(n)
}

// cutStop cuts the reply's text at the first stop sequence found in it, as
// the real API does, and returns the sequence it cut at.
func cutStop(c Call, r Reply) (Reply, *string) {
	at, seq := -1, ""
	for _, s := range c.StopSequences {
		if i := strings.Index(r.Text, s); s != "" && i >= 0 && (at < 0 || i < at) {
			at, seq = i, s
		}
	}
	if at < 0 {
		return r, nil
	}
	r.Text, r.ToolUse, r.StopReason = r.Text[:at], nil, "stop_sequence"
	return r, &seq
}

// message is the whole non-streaming answer.
func (s *Server) message(c Call, r Reply) message {
	r, seq := cutStop(c, r)
	bs := s.blocks(r)
	stop := stopReason(r)
	return message{
		StopSequence: seq,
		ID:           s.cfg.NewID("msg_"),
		Type:         "message",
		Role:         "assistant",
		Model:        c.Model,
		Content:      bs,
		StopReason:   &stop,
		Usage: usage{
			InputTokens:  tokens(len(c.Body)),
			OutputTokens: outputTokens(bs),
			ServiceTier:  "standard",
		},
	}
}

// writeStream answers with the Messages API server-sent event sequence.
func (s *Server) writeStream(w http.ResponseWriter, c Call, r Reply) {
	full := s.message(c, r)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", s.cfg.NewID("req_"))
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}

	start := full
	start.Content = []block{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]string{"type": "ping"})
	for i, b := range full.Content {
		empty := b
		switch b.Type {
		case "text":
			text := ""
			empty.Text = &text
		case "tool_use":
			empty.Input = json.RawMessage(`{}`)
		}
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": empty})
		switch b.Type {
		case "text":
			for _, part := range split(*b.Text, s.cfg.Chunks) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			for _, part := range split(string(b.Input), 2) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": full.StopReason, "stop_sequence": full.StopSequence},
		"usage": full.Usage,
	})
	event("message_stop", map[string]string{"type": "message_stop"})
}

// split cuts s into at most n non-empty pieces of similar rune length; an
// empty s gives no pieces.
func split(s string, n int) []string {
	rs := []rune(s)
	n = max(1, min(n, len(rs)))
	var out []string
	for i := range n {
		from, to := i*len(rs)/n, (i+1)*len(rs)/n
		if from < to {
			out = append(out, string(rs[from:to]))
		}
	}
	return out
}

// errorTypes maps HTTP statuses to Anthropic error types.
var errorTypes = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	http.StatusInternalServerError:   "api_error",
	529:                              "overloaded_error",
}

// ErrorType is the Anthropic error type for an HTTP status: the documented
// mapping, else api_error for 5xx and invalid_request_error for 4xx.
func ErrorType(status int) string {
	if t, ok := errorTypes[status]; ok {
		return t
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = fmt.Sprintf("fakeapi: %s (status %d)", ErrorType(status), status)
	}
	id := s.cfg.NewID("req_")
	w.Header().Set("Request-Id", id)
	writeJSON(w, status, map[string]any{
		"type":       "error",
		"error":      map[string]string{"type": ErrorType(status), "message": msg},
		"request_id": id,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
