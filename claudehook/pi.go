package claudehook

import (
	"encoding/json"
	"fmt"
	"os"
)

// Pi's agents send their hooks through fleetd's extension for Pi
// (herdrbridge's piExtensionSource), in Claude Code's names and fields:
// transcript_path is the Pi session file, whose tail holds the turn's
// usage.
func init() { usageReaders["pi"] = ReadPiUsage }

// piLine is the part of a Pi 0.73.1 session line (JSONL) the usage is read
// from: a message entry, its role, and an assistant message's model, stop
// reason and usage (input without the cache, as Anthropic counts it).
type piLine struct {
	Type    string `json:"type"`
	Message struct {
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stopReason"`
		Usage      *struct {
			Input      int64 `json:"input"`
			Output     int64 `json:"output"`
			CacheRead  int64 `json:"cacheRead"`
			CacheWrite int64 `json:"cacheWrite"`
			Cost       struct {
				Total float64 `json:"total"`
			} `json:"cost"`
		} `json:"usage"`
	} `json:"message"`
}

// ReadPiUsage reads a Pi turn's tokens and cost from the tail of its
// session file: every assistant message after the last user message (a
// turn that used tools has several), the model of the last. Found once
// that user message is read, Ended once the last assistant message did not
// stop for a tool. promptID is not in Pi's file (the extension makes it
// up), and need not be: the extension runs the Stop hook inside Pi's
// agent_end and waits for it, so no later prompt can have started — the
// file's last turn is the hook's.
func ReadPiUsage(path, _ string, maxBytes int64) (Usage, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTranscript
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}, fmt.Errorf("pi session: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Usage{}, fmt.Errorf("pi session: %w", err)
	}
	var u Usage
	last := true
	_, err = scanBackward(f, st.Size(), maxBytes, func(raw []byte) bool {
		var l piLine
		if json.Unmarshal(raw, &l) != nil || l.Type != "message" {
			return true
		}
		switch l.Message.Role {
		case "user":
			u.Found = true
			return false
		case "assistant":
			if last {
				u.Model, u.Ended, last = l.Message.Model, l.Message.StopReason != "toolUse", false
			}
			if x := l.Message.Usage; x != nil {
				u.Tokens.In += x.Input
				u.Tokens.Out += x.Output
				u.Tokens.CacheRead += x.CacheRead
				u.Tokens.CacheCreation += x.CacheWrite
				u.CostUSD += x.Cost.Total
			}
		}
		return true
	})
	if err != nil {
		return Usage{}, fmt.Errorf("pi session: %w", err)
	}
	if !u.Found {
		return Usage{}, nil
	}
	u.Ended = u.Ended && !last
	return u, nil
}
