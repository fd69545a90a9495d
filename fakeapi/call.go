package fakeapi

import (
	"encoding/json"
	"strings"
)

// Call is what a rule sees of one model request, whatever its protocol: each
// protocol's decoder fills the same fields, so rules are written once.
type Call struct {
	// Protocol is the wire format the request came in.
	Protocol Protocol
	// Prompt is the user's prompt: the last text block of a user message
	// that does not start with <system-reminder>; empty when there is none.
	Prompt string
	// ToolResults are the tool_result blocks that come after the prompt, in
	// order: the results of earlier rounds of this turn's tool loop.
	ToolResults []ToolResult
	// Attached are the files Claude Code attached to the prompt because it
	// @-mentioned them: it reads each with its Read tool and sends the
	// call and the numbered result as system reminders before the prompt.
	Attached []Attachment
	// System is the system prompt, its text blocks joined by newlines.
	System string
	// Model is the requested model, echoed back in the answer.
	Model string
	// MaxTokens is the request's max_tokens.
	MaxTokens int
	// Stream tells whether the client asked for server-sent events.
	Stream bool
	// Tools are the names of the tools offered to the model.
	Tools []string
	// StopSequences are the request's stop_sequences; the server cuts a
	// reply's text at the first one, as the real API does.
	StopSequences []string
	// Schema is the JSON schema of output_config.format when the client asks
	// for structured output; nil otherwise.
	Schema json.RawMessage
	// Body is the raw request body.
	Body []byte

	// side tells that the prompt's message opens with a CLI's side-call
	// instruction (see sideCallPrefixes), so IsAuxiliary keeps it off the
	// rules even when the prompt itself is the user's text.
	side bool
}

// Attachment is one file attached to a prompt, as the model saw it.
type Attachment struct {
	// Path is the file Claude Code read.
	Path string
	// Text is the file's content with the Read tool's line numbers
	// removed: what the file holds, up to what Claude Code chose to send.
	Text string
}

// ToolResult is one tool_result block sent back by the client.
type ToolResult struct {
	// ToolUseID is the id of the tool_use block this answers.
	ToolUseID string `json:"tool_use_id"`
	// Text is the result's text, its text blocks joined by newlines.
	Text string `json:"text"`
	// IsError tells whether the tool failed (or was denied permission).
	IsError bool `json:"is_error,omitempty"`
}

type wireRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []wireMessage   `json:"messages"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	StopSequences []string `json:"stop_sequences"`
	OutputConfig  struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

const systemReminder = "<system-reminder>"

// parseCall decodes a Messages API request body into a Call.
func parseCall(body []byte) (Call, error) {
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Call{}, err
	}
	c := Call{
		Model:     req.Model,
		MaxTokens: req.MaxTokens,
		Stream:    req.Stream,
		System:    joinText(blocksOf(req.System)),
		Body:      body,

		StopSequences: req.StopSequences,
	}
	if f := req.OutputConfig.Format; f != nil && f.Type == "json_schema" {
		c.Schema = f.Schema
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Name)
	}
	c.Prompt, c.ToolResults = extractPrompt(req.Messages)
	c.Attached = extractAttached(req.Messages)
	c.side = promptIsSideCall(req.Messages)
	return c, nil
}

// promptIsSideCall tells whether the message holding the prompt opens with a
// side-call instruction, as OpenCode's title call does: its last user message
// is "Generate a title for this conversation:" and then the prompt, as two
// text blocks.
func promptIsSideCall(msgs []wireMessage) bool {
	side := false
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		var texts []string
		prompt := false
		for _, b := range blocksOf(m.Content) {
			if b.Type == "text" {
				texts = append(texts, b.Text)
				prompt = prompt || !strings.HasPrefix(strings.TrimSpace(b.Text), systemReminder)
			}
		}
		if prompt {
			side = sideCall(texts...)
		}
	}
	return side
}

const (
	readCall   = "Called the Read tool with the following input: "
	readResult = "Result of calling the Read tool:\n"
)

// extractAttached finds the Read call/result reminder pairs of the
// current turn (the user messages after the last assistant message).
func extractAttached(msgs []wireMessage) []Attachment {
	var out []Attachment
	var path string
	for _, m := range msgs {
		if m.Role == "assistant" {
			out, path = nil, ""
			continue
		}
		for _, b := range blocksOf(m.Content) {
			t := strings.TrimSpace(b.Text)
			if b.Type != "text" || !strings.HasPrefix(t, systemReminder) {
				continue
			}
			body := strings.TrimSuffix(strings.TrimPrefix(t, systemReminder), "</system-reminder>")
			body = strings.TrimPrefix(body, "\n")
			switch {
			case strings.HasPrefix(body, readCall):
				var in struct {
					FilePath string `json:"file_path"`
				}
				_ = json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(body, readCall))), &in)
				path = in.FilePath
			case strings.HasPrefix(body, readResult) && path != "":
				out = append(out, Attachment{Path: path, Text: unnumber(strings.TrimPrefix(body, readResult))})
				path = ""
			}
		}
	}
	return out
}

// unnumber undoes the Read tool's "N\t" line prefixes. The result ends
// with a newline after its last numbered line, which is not the file's.
func unnumber(s string) string {
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if _, rest, ok := strings.Cut(l, "\t"); ok && isDigits(strings.TrimSpace(l[:len(l)-len(rest)-1])) {
			lines[i] = rest
		}
	}
	return strings.Join(lines, "\n")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// extractPrompt finds the user's prompt and the tool results after it.
func extractPrompt(msgs []wireMessage) (string, []ToolResult) {
	var prompt string
	var results []ToolResult
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		for _, b := range blocksOf(m.Content) {
			switch {
			case b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), systemReminder):
				prompt, results = b.Text, nil
			case b.Type == "tool_result":
				results = append(results, ToolResult{
					ToolUseID: b.ToolUseID,
					Text:      joinText(blocksOf(b.Content)),
					IsError:   b.IsError,
				})
			}
		}
	}
	return prompt, results
}

// blocksOf reads content that is either a string or an array of blocks.
func blocksOf(raw json.RawMessage) []wireBlock {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []wireBlock{{Type: "text", Text: s}}
	}
	var bs []wireBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func joinText(bs []wireBlock) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
