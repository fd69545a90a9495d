package claudehook

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fleetd/fleetd/events/eventcore"
)

func init() { usageReaders["opencode"] = ReadOpenCodeUsage }

// openCodeLine is a line of the usage file fleetd's OpenCode plugin keeps
// in the agent's config directory (the payloads' transcript_path): one
// per turn, written before its Stop hook runs, with the tokens and cost
// OpenCode recorded on the turn's assistant messages (one per model
// call), summed.
type openCodeLine struct {
	PromptID string `json:"prompt_id"`
	Model    string `json:"model"`
	Tokens   struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		Reasoning  int64 `json:"reasoning"`
		CacheRead  int64 `json:"cache_read"`
		CacheWrite int64 `json:"cache_write"`
	} `json:"tokens"`
	Cost float64 `json:"cost"`
}

// ReadOpenCodeUsage reads an OpenCode turn's tokens and cost (promptID,
// the plugin's prompt_id: the user message's id) from the tail of the
// plugin's usage file, as ReadUsage does Claude Code's transcript. The
// line is on disk before the Stop hook starts, so Found and Ended come
// together. OpenCode counts input without the cached part, as Claude
// Code does; reasoning tokens are output.
func ReadOpenCodeUsage(path, promptID string, maxBytes int64) (Usage, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTranscript
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}, fmt.Errorf("opencode usage: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Usage{}, fmt.Errorf("opencode usage: %w", err)
	}
	var u Usage
	_, err = scanBackward(f, st.Size(), maxBytes, func(raw []byte) bool {
		var l openCodeLine
		if json.Unmarshal(raw, &l) != nil || l.PromptID == "" || l.PromptID != promptID {
			return true
		}
		t := l.Tokens
		u.Model, u.CostUSD = l.Model, l.Cost
		u.Tokens = eventcore.Tokens{In: t.Input, Out: t.Output + t.Reasoning, CacheRead: t.CacheRead, CacheCreation: t.CacheWrite}
		u.Found, u.Ended = true, true
		return false
	})
	return u, err
}
