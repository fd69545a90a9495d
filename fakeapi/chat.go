package fakeapi

import (
	"encoding/json"
	"net/http"
	"strings"
)

// chatWire is OpenAI's Chat Completions API (POST /v1/chat/completions), what
// OpenAI-compatible providers speak.
type chatWire struct{ s *Server }

func (chatWire) protocol() Protocol { return ProtocolChat }

type chatRequest struct {
	Model               string `json:"model"`
	Stream              bool   `json:"stream"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	Messages            []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stop           json.RawMessage `json:"stop"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// decode takes the prompt from the last user message (content a string or
// parts), tool results from the tool messages after it, and the system
// prompt from system and developer messages.
func (chatWire) decode(_ *http.Request, body []byte) (Call, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	c := Call{Model: req.Model, Stream: req.Stream, MaxTokens: cmpOrInt(req.MaxCompletionTokens, req.MaxTokens), Body: body}
	if f := req.ResponseFormat; f != nil && f.Type == "json_schema" {
		c.Schema = f.JSONSchema.Schema
		if len(c.Schema) == 0 {
			c.Schema = json.RawMessage(`{}`)
		}
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Function.Name)
	}
	// stop is a string or an array of them.
	if err := json.Unmarshal(req.Stop, &c.StopSequences); err != nil {
		var one string
		if json.Unmarshal(req.Stop, &one) == nil && one != "" {
			c.StopSequences = []string{one}
		}
	}
	var system []string
	turns := make([]turn, 0, len(req.Messages))
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, textsOf(m.Content)...)
		case "tool":
			turns = append(turns, turn{role: "tool", results: []ToolResult{{ToolUseID: m.ToolCallID, Text: outputText(m.Content)}}})
		default:
			turns = append(turns, turn{role: m.Role, texts: textsOf(m.Content)})
		}
	}
	c.System = strings.Join(system, "\n")
	c.Prompt, c.ToolResults, _, c.side = findPrompt(turns)
	return c, nil
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatUsage is Chat Completions token accounting.
type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (p chatWire) reply(w http.ResponseWriter, c Call, r Reply) {
	r, _ = cutStop(c, r)
	finish := "stop"
	var call *chatToolCall
	if r.ToolUse != nil {
		id, name, input := p.s.toolCall(r, "call_")
		call = &chatToolCall{ID: id, Type: "function"}
		call.Function.Name, call.Function.Arguments = name, string(input)
		finish = "tool_calls"
	}
	in, out := tokens(len(c.Body)), replyTokens(r)
	usage := chatUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
	id, created := p.s.cfg.NewID("chatcmpl-"), p.s.cfg.Now().Unix()

	if !c.Stream {
		msg := map[string]any{"role": "assistant", "content": r.Text}
		if call != nil {
			msg["tool_calls"] = []chatToolCall{*call}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage":   usage,
		})
		return
	}

	// data-only chunks, then [DONE]. Usage rides on the finishing chunk
	// whether or not stream_options.include_usage asked for it, which every
	// client tolerates and lets each report tokens.
	e := p.s.startSSE(w, false)
	chunk := func(delta map[string]any, finish any, usage *chatUsage) {
		m := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		if usage != nil {
			m["usage"] = usage
		}
		e.send("", m)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, part := range split(r.Text, p.s.cfg.Chunks) {
		chunk(map[string]any{"content": part}, nil, nil)
	}
	if call != nil {
		zero := 0
		head := *call
		head.Index, head.Function.Arguments = &zero, ""
		chunk(map[string]any{"tool_calls": []chatToolCall{head}}, nil, nil)
		for _, part := range split(call.Function.Arguments, 2) {
			var more chatToolCall
			more.Index, more.Function.Arguments = &zero, part
			chunk(map[string]any{"tool_calls": []chatToolCall{more}}, nil, nil)
		}
	}
	chunk(map[string]any{}, finish, &usage)
	e.send("", "[DONE]")
}

func (p chatWire) fail(w http.ResponseWriter, status int, msg string) {
	writeOpenAIError(p.s, w, status, msg)
}
