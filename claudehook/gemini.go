package claudehook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/fleetd/fleetd/events/eventcore"
)

func init() { usageReaders["gemini"] = ReadGeminiUsage }

// geminiHooks are Gemini CLI's names (lower case, without separators, as
// ParseHook compares them) for the hooks that stand for Claude Code's:
// BeforeAgent carries the prompt, AfterAgent the reply. SessionStart,
// Notification and SessionEnd share Claude Code's names. fleetd writes
// Claude Code's spelling into a Gemini agent's settings; these let a
// hand-written `fleetd hook after-agent` work too.
var geminiHooks = map[string]Hook{"beforeagent": UserPromptSubmit, "afteragent": Stop}

// geminiFields are the fields of Gemini CLI's hook payloads that Claude
// Code's lack: AfterAgent's reply is prompt_response, not
// last_assistant_message (its prompt is "prompt", as in Claude Code's
// UserPromptSubmit). Gemini names no prompt: its payloads carry no
// prompt_id or turn_id.
type geminiFields struct {
	PromptResponse string `json:"prompt_response"`
}

// fillGemini completes p from a Gemini payload's own fields (b, the raw
// payload); any other payload is left as it is, without a second decode.
func fillGemini(b []byte, p *Payload) {
	if p.LastAssistantMessage != "" || !bytes.Contains(b, []byte(`"prompt_response"`)) {
		return
	}
	var g geminiFields
	if json.Unmarshal(b, &g) == nil {
		p.LastAssistantMessage = g.PromptResponse
	}
}

// geminiRecord is the part of a line of Gemini CLI's session file (its
// hooks' transcript_path, JSONL) the usage is read from: each message is
// a record, written again whole when it changes (its tokens come after
// it), and metadata lines ({"$set": …}) have no type.
type geminiRecord struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"` // "user", "gemini", "info", "error", …
	Content json.RawMessage `json:"content"`
	Model   string          `json:"model"`
	Tokens  *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
	} `json:"tokens"`
}

// text is the record's content as text: a gemini message's is a string,
// a user message's a list of parts.
func (r geminiRecord) text() string {
	var s string
	if json.Unmarshal(r.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(r.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ReadGeminiUsage reads the last turn of a Gemini CLI session file (path,
// the hooks' transcript_path) from its tail, as ReadUsage does Claude
// Code's: the gemini messages after the last user message, each message
// counted once in its latest version. Gemini's payloads name no prompt, so
// promptID is not used: the AfterAgent hook runs after the turn's last
// message is written, and no next prompt can start before it returns.
// Input counts the cached input too, as Gemini's usage does; thoughts are
// output. Reply is the turn's text, its messages joined by a newline as
// Gemini joins them for AfterAgent, but whole: 0.61.0's prompt_response
// joins the streamed chunks of one message with spaces. Gemini reports
// no cost.
func ReadGeminiUsage(path, _ string, maxBytes int64) (Usage, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTranscript
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}, fmt.Errorf("gemini session: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Usage{}, fmt.Errorf("gemini session: %w", err)
	}
	var (
		u     Usage
		seen  = map[string]bool{}
		texts []string // newest first
	)
	_, err = scanBackward(f, st.Size(), maxBytes, func(raw []byte) bool {
		var r geminiRecord
		if json.Unmarshal(raw, &r) != nil || r.Type == "" || seen[r.ID] && r.ID != "" {
			return true
		}
		seen[r.ID] = true
		switch r.Type {
		case "user":
			u.Found = true
			return false
		case "gemini":
			u.Ended = true
			if u.Model == "" {
				u.Model = r.Model
			}
			if t := r.Tokens; t != nil {
				u.Tokens.In += t.Input - t.Cached
				u.Tokens.CacheRead += t.Cached
				u.Tokens.Out += t.Output + t.Thoughts
			}
			if s := r.text(); s != "" {
				texts = append(texts, s)
			}
		}
		return true
	})
	for i := len(texts) - 1; i >= 0; i-- {
		u.Reply += texts[i]
		if i > 0 {
			u.Reply += "\n"
		}
	}
	if !u.Found {
		u.Ended, u.Reply, u.Tokens = false, "", eventcore.Tokens{}
	}
	return u, err
}
