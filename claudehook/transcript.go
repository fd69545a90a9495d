package claudehook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	events "github.com/fleetd/fleetd/events/eventcore"
)

// DefaultMaxTranscript caps how much of a transcript's tail a hook reads.
const DefaultMaxTranscript = 4 << 20

// Usage is what one turn cost, as read from a Claude Code transcript.
type Usage struct {
	// Model is the model of the turn's last assistant message.
	Model  string
	Tokens events.Tokens
	// CostUSD is the growth of the session's totalCostUSD over the turn;
	// zero when it cannot be told (no cost-state lines, or the read cap
	// cut off the previous total).
	CostUSD float64
	// Found reports whether the turn's prompt line was in the tail read.
	Found bool
	// Ended reports whether the turn's final assistant message (a
	// stop_reason other than tool_use) was read. Claude Code writes its
	// transcript asynchronously: a Stop hook can start before that line is
	// on disk.
	Ended bool
	// Reply is the turn's reply as the transcript has it, for a kind
	// whose Stop payload may not have it whole (Gemini's); "" keeps the
	// payload's.
	Reply string
}

// transcriptLine is the part of a transcript JSONL line the hook needs.
type transcriptLine struct {
	Type     string `json:"type"`
	PromptID string `json:"promptId"`
	Message  struct {
		ID         string `json:"id"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Usage      *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	TotalCostUSD *float64 `json:"totalCostUSD"`
	ModelUsage   map[string]struct {
		CostUSD float64 `json:"costUSD"`
	} `json:"modelUsage"`
}

// cost is a cost-state line's session total.
func (l transcriptLine) cost() float64 {
	if l.TotalCostUSD != nil {
		return *l.TotalCostUSD
	}
	var sum float64
	for _, m := range l.ModelUsage {
		sum += m.CostUSD
	}
	return sum
}

// region accumulates lines read backwards since the last of the turn's
// user lines (or since the end of the file).
type region struct {
	tokens events.Tokens
	model  string
	cost   *float64 // the latest cost-state total in the region
	ended  bool     // a final assistant message is in the region
}

// ReadUsage sums the usage of the turn promptID in the transcript at path:
// the assistant messages after the first user line carrying promptID (its
// prompt; tool results of the same turn may carry it again), up to the
// end. An empty promptID means the last prompt in the file. It reads the
// file backwards from the end, at most maxBytes (<= 0: DefaultMaxTranscript),
// so a long session costs a hook no more than a short one. Streamed
// messages written as several lines with one message id count once.
func ReadUsage(path, promptID string, maxBytes int64) (Usage, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTranscript
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Usage{}, fmt.Errorf("transcript: %w", err)
	}
	var (
		u       Usage
		pending region
		latest  *float64
		seen    = map[string]bool{}
		past    bool // read past the turn: only the total before it matters
	)
	commit := func() {
		u.Tokens = u.Tokens.Add(pending.tokens)
		u.Ended = u.Ended || pending.ended
		if u.Model == "" {
			u.Model = pending.model
		}
		if latest == nil {
			latest = pending.cost
		}
		pending = region{}
	}
	complete, err := scanBackward(f, st.Size(), maxBytes, func(raw []byte) bool {
		var l transcriptLine
		if json.Unmarshal(raw, &l) != nil {
			return true // a torn or foreign line: not ours to judge
		}
		if past {
			if l.Type != "cost-state" {
				return true
			}
			c := l.cost()
			pending.cost = &c
			return false
		}
		switch l.Type {
		case "assistant":
			if r := l.Message.StopReason; r != "" && r != "tool_use" {
				pending.ended = true
			}
			if l.Message.ID != "" {
				if seen[l.Message.ID] {
					return true
				}
				seen[l.Message.ID] = true
			}
			if l.Message.Usage != nil {
				pending.tokens = pending.tokens.Add(events.Tokens{
					In: l.Message.Usage.InputTokens, Out: l.Message.Usage.OutputTokens,
					CacheRead: l.Message.Usage.CacheReadInputTokens, CacheCreation: l.Message.Usage.CacheCreationInputTokens,
				})
			}
			if pending.model == "" && !strings.HasPrefix(l.Message.Model, "<") {
				pending.model = l.Message.Model
			}
		case "cost-state":
			if pending.cost == nil {
				c := l.cost()
				pending.cost = &c
			}
		case "user":
			if l.PromptID == "" {
				return true
			}
			if promptID == "" {
				promptID = l.PromptID
			}
			if l.PromptID == promptID {
				u.Found = true
				commit()
				return true
			}
			if u.Found {
				past = true
				return pending.cost == nil
			}
			// A later prompt than ours: what we gathered belongs to it.
			pending = region{}
		}
		return true
	})
	if err != nil {
		return Usage{}, fmt.Errorf("transcript: %w", err)
	}
	if !u.Found {
		return Usage{}, nil
	}
	// pending now holds the lines before the turn's prompt: its latest
	// cost-state is the session total the turn started from.
	switch {
	case latest == nil:
	case pending.cost != nil:
		u.CostUSD = max(*latest-*pending.cost, 0)
	case complete:
		u.CostUSD = *latest // the session started with the file
	}
	return u, nil
}

// scanBackward calls fn with each non-blank line of the last max bytes of
// f, last line first, until fn returns false. complete reports whether the
// whole file was read (the first line reached).
func scanBackward(f *os.File, size, max int64, fn func([]byte) bool) (complete bool, err error) {
	const chunk = 64 << 10
	var carry []byte
	pos, read := size, int64(0)
	for pos > 0 && read < max {
		n := min(int64(chunk), pos, max-read)
		pos -= n
		read += n
		buf := make([]byte, n, n+int64(len(carry)))
		if _, err := f.ReadAt(buf, pos); err != nil {
			return false, err
		}
		data := append(buf, carry...)
		for {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				break
			}
			if line := bytes.TrimSpace(data[i+1:]); len(line) > 0 && !fn(line) {
				return false, nil
			}
			data = data[:i]
		}
		carry = data
	}
	if pos > 0 {
		return false, nil // the cap cut the carried line: it is partial
	}
	if line := bytes.TrimSpace(carry); len(line) > 0 {
		fn(line)
	}
	return true, nil
}
