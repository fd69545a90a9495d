package claudehook

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fleetd/fleetd/events/eventcore"
)

// codexLine is the part of a Codex rollout line (its session's JSONL,
// the hooks' transcript_path) the usage is read from: Codex 0.169.0 writes
// a token_usage_record per model response, naming the turn and carrying
// the turn's usage so far.
type codexLine struct {
	Type    string `json:"type"`
	Payload struct {
		TurnID         string     `json:"turn_id"`
		TurnTokenUsage codexUsage `json:"turn_token_usage"`
	} `json:"payload"`
}

// codexUsage is OpenAI's usage: input counts the cached input too.
type codexUsage struct {
	Input      int64 `json:"input_tokens"`
	Cached     int64 `json:"cached_input_tokens"`
	CacheWrite int64 `json:"cache_write_input_tokens"`
	Output     int64 `json:"output_tokens"`
}

// ReadCodexUsage reads a Codex turn's tokens (turnID, the hooks' turn_id)
// from the tail of its rollout file, as ReadUsage does Claude Code's: the
// last token_usage_record of the turn (Found and Ended once there is one).
// Codex reports no cost.
func ReadCodexUsage(path, turnID string, maxBytes int64) (Usage, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTranscript
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}, fmt.Errorf("rollout: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Usage{}, fmt.Errorf("rollout: %w", err)
	}
	var u Usage
	_, err = scanBackward(f, st.Size(), maxBytes, func(raw []byte) bool {
		var l codexLine
		if json.Unmarshal(raw, &l) != nil || l.Type != "token_usage_record" || l.Payload.TurnID != turnID {
			return true
		}
		t := l.Payload.TurnTokenUsage
		u.Tokens = eventcore.Tokens{In: t.Input - t.Cached, Out: t.Output, CacheRead: t.Cached, CacheCreation: t.CacheWrite}
		u.Found, u.Ended = true, true
		return false
	})
	return u, err
}
