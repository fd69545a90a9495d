package fakeapi

import (
	"encoding/json"
	"net/http"
	"strings"
)

// geminiWire is the Gemini API: POST /v1beta/models/<model>:generateContent
// (JSON), :streamGenerateContent (SSE with ?alt=sse, else one JSON array)
// and :countTokens, what Gemini CLI speaks. The model is in the path.
type geminiWire struct {
	s      *Server
	model  string
	stream bool // :streamGenerateContent
	sse    bool // ?alt=sse
}

func (geminiWire) protocol() Protocol { return ProtocolGemini }

// geminiPath splits ".../models/<model>:<method>" into model and method.
func geminiPath(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok = strings.Cut(path[i+len("/models/"):], ":")
	return model, method, ok && model != "" && !strings.Contains(model, "/")
}

// isGeminiModels tells a Gemini model list (GET /v1beta/models) from
// OpenAI's and Anthropic's /v1/models.
func isGeminiModels(path string) bool {
	return path == "/v1beta/models" || path == "/v1alpha/models"
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens    int             `json:"maxOutputTokens"`
		StopSequences      []string        `json:"stopSequences"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
	// GenerateContentRequest wraps the request in a countTokens call.
	GenerateContentRequest *geminiRequest `json:"generateContentRequest"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             *string     `json:"text,omitempty"`
	Thought          bool        `json:"thought,omitempty"`
	FunctionCall     *geminiCall `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

// geminiCall is a functionCall part: the model asks for a tool by name.
type geminiCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Gemini CLI expands an @-mentioned file into text parts after the prompt:
// the opening marker, "Content from @<path>:" and the file, the end marker.
const (
	geminiFilesOpen  = "\n--- Content from referenced files ---"
	geminiFileHead   = "\nContent from @"
	geminiFilesClose = "\n--- End of content ---"
)

// decode reads the prompt as the text of the last user content that is not
// Gemini CLI's injected session context, its text parts joined, cut before
// the referenced files it attached (which become Call.Attached). A
// JSON response MIME type is a structured-output side call (Call.Schema).
func (g geminiWire) decode(_ *http.Request, body []byte) (Call, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	if req.GenerateContentRequest != nil {
		req = *req.GenerateContentRequest
	}
	gc := req.GenerationConfig
	c := Call{Model: g.model, Stream: g.stream, MaxTokens: gc.MaxOutputTokens,
		StopSequences: gc.StopSequences, Body: body}
	if gc.ResponseMimeType == "application/json" {
		c.Schema = json.RawMessage(`{}`)
		for _, s := range []json.RawMessage{gc.ResponseJSONSchema, gc.ResponseSchema} {
			if len(s) > 0 && string(s) != "null" {
				c.Schema = s
				break
			}
		}
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			c.Tools = append(c.Tools, f.Name)
		}
	}
	if si := req.SystemInstruction; si != nil {
		c.System = strings.Join(geminiTexts(si.Parts), "\n")
	}
	turns := make([]turn, 0, len(req.Contents))
	for _, ct := range req.Contents {
		t := turn{role: ct.Role}
		var own []string
		for _, text := range geminiTexts(ct.Parts) {
			if !injected(text) {
				own = append(own, text)
			}
		}
		if len(own) > 0 {
			t.texts = []string{strings.Join(own, "")}
		}
		for _, p := range ct.Parts {
			if fr := p.FunctionResponse; fr != nil {
				t.results = append(t.results, geminiResult(fr.ID, fr.Name, fr.Response))
			}
		}
		turns = append(turns, t)
	}
	var prompt string
	prompt, c.ToolResults, _, c.side = findPrompt(turns)
	c.Prompt, c.Attached = splitReferencedFiles(prompt)
	return c, nil
}

func geminiTexts(parts []geminiPart) []string {
	var out []string
	for _, p := range parts {
		if p.Text != nil && !p.Thought {
			out = append(out, *p.Text)
		}
	}
	return out
}

// geminiResult reads a functionResponse: Gemini CLI sends {"output": text}
// or {"error": text}; anything else is kept as JSON.
func geminiResult(id, name string, raw json.RawMessage) ToolResult {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	_ = json.Unmarshal(raw, &r)
	switch {
	case r.Output != nil:
		return ToolResult{ToolUseID: cmpOr(id, name), Text: *r.Output}
	case r.Error != nil:
		return ToolResult{ToolUseID: cmpOr(id, name), Text: *r.Error, IsError: true}
	}
	return ToolResult{ToolUseID: cmpOr(id, name), Text: string(raw)}
}

// splitReferencedFiles cuts Gemini CLI's referenced-files section off a
// prompt and reads the files in it.
func splitReferencedFiles(s string) (string, []Attachment) {
	prompt, files, ok := strings.Cut(s, geminiFilesOpen)
	if !ok {
		return s, nil
	}
	files, _, _ = strings.Cut(files, geminiFilesClose)
	var out []Attachment
	for _, sec := range strings.Split(files, geminiFileHead)[1:] {
		path, text, _ := strings.Cut(sec, ":\n")
		out = append(out, Attachment{Path: path, Text: text})
	}
	return prompt, out
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

// frames cuts the reply into streamed responses: one per text chunk, the
// function call (if any) and finishReason STOP with usageMetadata on the
// last. Unstreamed, the frames are merged into one.
func (g geminiWire) frames(c Call, r Reply, chunks int) []geminiResponse {
	r, _ = cutStop(c, r)
	var parts []geminiPart
	for _, piece := range split(r.Text, chunks) {
		parts = append(parts, geminiPart{Text: &piece})
	}
	if len(parts) == 0 && r.ToolUse == nil {
		empty := ""
		parts = append(parts, geminiPart{Text: &empty})
	}
	if r.ToolUse != nil {
		_, name, input := g.s.toolCall(r, "call_")
		parts = append(parts, geminiPart{FunctionCall: &geminiCall{Name: name, Args: input}})
	}
	id := g.s.cfg.NewID("gresp_")
	out := make([]geminiResponse, len(parts))
	for i, p := range parts {
		out[i] = geminiResponse{
			Candidates:   []geminiCandidate{{Content: geminiContent{Role: "model", Parts: []geminiPart{p}}}},
			ModelVersion: c.Model,
			ResponseID:   id,
		}
	}
	in, n := tokens(len(c.Body)), replyTokens(r)
	last := &out[len(out)-1]
	last.Candidates[0].FinishReason = "STOP"
	last.UsageMetadata = &geminiUsage{PromptTokenCount: in, CandidatesTokenCount: n, TotalTokenCount: in + n}
	return out
}

func (g geminiWire) reply(w http.ResponseWriter, c Call, r Reply) {
	switch {
	case c.Stream && g.sse:
		e := g.s.startSSE(w, true)
		for _, f := range g.frames(c, r, g.s.cfg.Chunks) {
			e.send("", f)
		}
	case c.Stream:
		// Without ?alt=sse the real API answers a stream as one JSON
		// array of the responses it would have streamed.
		writeJSON(w, http.StatusOK, g.frames(c, r, g.s.cfg.Chunks))
	default:
		frames := g.frames(c, r, 1)
		var parts []geminiPart
		for _, f := range frames {
			parts = append(parts, f.Candidates[0].Content.Parts...)
		}
		whole := frames[len(frames)-1]
		whole.Candidates[0].Content.Parts = parts
		writeJSON(w, http.StatusOK, whole)
	}
}

// geminiStatuses maps HTTP statuses to Google's canonical error status.
var geminiStatuses = map[int]string{
	http.StatusBadRequest:          "INVALID_ARGUMENT",
	http.StatusUnauthorized:        "UNAUTHENTICATED",
	http.StatusForbidden:           "PERMISSION_DENIED",
	http.StatusNotFound:            "NOT_FOUND",
	http.StatusTooManyRequests:     "RESOURCE_EXHAUSTED",
	http.StatusInternalServerError: "INTERNAL",
	http.StatusServiceUnavailable:  "UNAVAILABLE",
	http.StatusGatewayTimeout:      "DEADLINE_EXCEEDED",
	529:                            "UNAVAILABLE",
}

func (g geminiWire) fail(w http.ResponseWriter, status int, msg string) {
	st, ok := geminiStatuses[status]
	if !ok {
		st = "INVALID_ARGUMENT"
		if status >= 500 {
			st = "INTERNAL"
		}
	}
	if msg == "" {
		msg = "fakeapi: " + st
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
}

func (s *Server) handleGeminiModels(w http.ResponseWriter, r *http.Request) {
	rec := s.newRequest(r, nil)
	rec.Status = http.StatusOK
	s.record(rec)
	models := make([]map[string]any, 0, len(s.cfg.Models))
	for _, id := range s.cfg.Models {
		models = append(models, map[string]any{
			"name": "models/" + id, "baseModelId": id, "displayName": id, "version": "001",
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}
