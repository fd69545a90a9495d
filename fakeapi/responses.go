package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// responsesWire is OpenAI's Responses API (POST /v1/responses), the protocol
// Codex speaks.
type responsesWire struct{ s *Server }

func (responsesWire) protocol() Protocol { return ProtocolResponses }

type responsesRequest struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions"`
	Input           json.RawMessage `json:"input"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Tools           []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Text struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

// responsesItem is one input item: a message (role and content), a
// function_call_output (a tool result) or anything else, which is skipped.
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// decode finds the prompt among Codex's input items: two developer messages,
// a user message holding <environment_context> (and one with AGENTS.md when
// the project has one), then the user's own input_text. Developer and system
// messages and instructions make up Call.System.
func (responsesWire) decode(_ *http.Request, body []byte) (Call, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	c := Call{Model: req.Model, Stream: req.Stream, MaxTokens: req.MaxOutputTokens, Body: body}
	if f := req.Text.Format; f != nil && f.Type == "json_schema" {
		c.Schema = f.Schema
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, cmpOr(t.Name, t.Type))
	}
	system := []string{}
	if req.Instructions != "" {
		system = append(system, req.Instructions)
	}
	var plain string
	if err := json.Unmarshal(req.Input, &plain); err == nil {
		c.Prompt, c.side = plain, sideCall(plain)
		c.System = strings.Join(system, "\n")
		return c, nil
	}
	var items []responsesItem
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return Call{}, err
		}
	}
	turns := make([]turn, 0, len(items))
	for _, it := range items {
		switch {
		case it.Type == "function_call_output":
			turns = append(turns, turn{role: "tool", results: []ToolResult{{ToolUseID: it.CallID, Text: outputText(it.Output)}}})
		case it.Role == "developer" || it.Role == "system":
			system = append(system, textsOf(it.Content)...)
		case it.Role != "" && (it.Type == "" || it.Type == "message"):
			turns = append(turns, turn{role: it.Role, texts: textsOf(it.Content)})
		}
	}
	c.System = strings.Join(system, "\n")
	c.Prompt, c.ToolResults, _, c.side = findPrompt(turns)
	return c, nil
}

// outputText reads a function_call_output's output: a string, or content
// parts whose texts are joined.
func outputText(raw json.RawMessage) string {
	return strings.Join(textsOf(raw), "\n")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// responsesUsage is the Responses API's token accounting, which Codex reads
// from response.completed.
type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// responsesItemOut is an output item: an assistant message or a
// function_call.
type responsesItemOut struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	Role      string         `json:"role,omitempty"`
	Content   []responsesOut `json:"content,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Namespace string         `json:"namespace,omitempty"`
	Arguments *string        `json:"arguments,omitempty"`
}

type responsesOut struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responsesObject struct {
	ID        string             `json:"id"`
	Object    string             `json:"object"`
	CreatedAt int64              `json:"created_at"`
	Status    string             `json:"status"`
	Model     string             `json:"model"`
	Output    []responsesItemOut `json:"output"`
	Usage     *responsesUsage    `json:"usage"`
	Error     any                `json:"error"`
}

// response builds the whole answer: a message item for the text (also when
// there is neither text nor tool call) and a function_call item for the tool
// call, whose call_id the next request's function_call_output names.
func (p responsesWire) response(c Call, r Reply) responsesObject {
	r, _ = cutStop(c, r)
	var items []responsesItemOut
	if r.Text != "" || r.ToolUse == nil {
		items = append(items, responsesItemOut{Type: "message", ID: p.s.cfg.NewID("msg_"), Status: "completed",
			Role: "assistant", Content: []responsesOut{{Type: "output_text", Text: r.Text, Annotations: []any{}}}})
	}
	if r.ToolUse != nil {
		id, name, input := p.s.toolCall(r, "call_")
		args := string(input)
		ns, name := responsesNamespace(c.Body, name)
		items = append(items, responsesItemOut{Type: "function_call", ID: p.s.cfg.NewID("fc_"), Status: "completed",
			CallID: id, Name: name, Namespace: ns, Arguments: &args})
	}
	in, out := tokens(len(c.Body)), replyTokens(r)
	return responsesObject{
		ID:        p.s.cfg.NewID("resp_"),
		Object:    "response",
		CreatedAt: p.s.cfg.Now().Unix(),
		Status:    "completed",
		Model:     c.Model,
		Output:    items,
		Usage: &responsesUsage{
			InputTokens: in, InputTokensDetails: map[string]int{"cached_tokens": 0},
			OutputTokens: out, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
			TotalTokens: in + out,
		},
	}
}

// responsesNamespace splits a tool name into the namespace the request
// offered it in and its name there: Codex 0.169.0 offers an MCP server's
// tools as one tool of type "namespace" ("mcp__fleetd", holding "send",
// …) and runs a call only when it names both, as the real API answers
// ("namespace": "mcp__fleetd", "name": "send"); a marker names the tool
// whole, "mcp__fleetd__send". A name no offered namespace holds is
// returned as it is, with no namespace.
func responsesNamespace(body []byte, name string) (namespace, tool string) {
	var req struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "", name
	}
	for _, t := range req.Tools {
		rest, ok := strings.CutPrefix(name, t.Name+"__")
		if t.Type != "namespace" || !ok {
			continue
		}
		for _, in := range t.Tools {
			if in.Name == rest {
				return t.Name, rest
			}
		}
	}
	return "", name
}

func (p responsesWire) reply(w http.ResponseWriter, c Call, r Reply) {
	full := p.response(c, r)
	if !c.Stream {
		writeJSON(w, http.StatusOK, full)
		return
	}
	// The events of the real API, a superset of the five Codex 0.169.0 was
	// verified with (created, output_item.added, output_text.delta,
	// output_item.done, completed); Codex ignores the others.
	e := p.s.startSSE(w, false)
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = e.count
		e.send(typ, fields)
	}
	start := full
	start.Status, start.Output, start.Usage = "in_progress", []responsesItemOut{}, nil
	event("response.created", map[string]any{"response": start})
	event("response.in_progress", map[string]any{"response": start})
	for i, it := range full.Output {
		switch it.Type {
		case "message":
			text := it.Content[0].Text
			open := it
			open.Status, open.Content = "in_progress", []responsesOut{}
			event("response.output_item.added", map[string]any{"output_index": i, "item": open})
			at := map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0}
			event("response.content_part.added", with(at, "part", responsesOut{Type: "output_text", Annotations: []any{}}))
			for _, part := range split(text, p.s.cfg.Chunks) {
				event("response.output_text.delta", with(at, "delta", part))
			}
			event("response.output_text.done", with(at, "text", text))
			event("response.content_part.done", with(at, "part", it.Content[0]))
		case "function_call":
			open, empty := it, ""
			open.Status, open.Arguments = "in_progress", &empty
			event("response.output_item.added", map[string]any{"output_index": i, "item": open})
			at := map[string]any{"item_id": it.ID, "output_index": i}
			for _, part := range split(*it.Arguments, 2) {
				event("response.function_call_arguments.delta", with(at, "delta", part))
			}
			event("response.function_call_arguments.done", with(at, "arguments", *it.Arguments))
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": full})
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

func (p responsesWire) fail(w http.ResponseWriter, status int, msg string) {
	writeOpenAIError(p.s, w, status, msg)
}

// openAIErrorTypes maps HTTP statuses to the error type and code OpenAI
// answers with.
var openAIErrorTypes = map[int][2]string{
	http.StatusBadRequest:          {"invalid_request_error", ""},
	http.StatusUnauthorized:        {"invalid_request_error", "invalid_api_key"},
	http.StatusForbidden:           {"invalid_request_error", "unsupported_country_region_territory"},
	http.StatusNotFound:            {"invalid_request_error", "model_not_found"},
	http.StatusTooManyRequests:     {"requests", "rate_limit_exceeded"},
	http.StatusInternalServerError: {"server_error", ""},
	http.StatusServiceUnavailable:  {"server_error", "server_is_overloaded"},
}

// writeOpenAIError answers an OpenAI error JSON, the shape both OpenAI
// protocols share.
func writeOpenAIError(s *Server, w http.ResponseWriter, status int, msg string) {
	t, ok := openAIErrorTypes[status]
	if !ok {
		t = [2]string{"invalid_request_error", ""}
		if status >= 500 {
			t[0] = "server_error"
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("fakeapi: %s (status %d)", t[0], status)
	}
	var code any
	if t[1] != "" {
		code = t[1]
	}
	w.Header().Set("X-Request-Id", s.cfg.NewID("req_"))
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": t[0], "param": nil, "code": code},
	})
}
