package fakeapi

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultRules returns a fresh copy of the default rule set documented in the
// package comment: auxiliary, status, tool, echo. Each call returns rules with
// their own state (the "[status=NxK]" counters).
func DefaultRules() []Rule {
	return []Rule{
		{Name: "auxiliary", Match: IsAuxiliary, Reply: auxiliaryReply},
		statusRule(),
		{Name: "tool", Match: wantsTool, Reply: toolReply},
		{Name: "echo", Match: Always, Reply: delayed(Echo)},
	}
}

// Compiled on first use, not as every fleetd process (each hook run) starts.
var (
	delayMarker  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[delay=([^\]\s]+)\]`) })
	statusMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[status=(\d{3})(?:x(\d+))?\]`) })
	toolMarker   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[tool=([A-Za-z0-9_.-]+):`) })
)

// MarkerDelay is the "[delay=D]" of a prompt, 0 when absent or malformed.
func MarkerDelay(prompt string) time.Duration {
	m := delayMarker().FindStringSubmatch(prompt)
	if m == nil {
		return 0
	}
	d, err := time.ParseDuration(m[1])
	if err != nil || d < 0 {
		return 0
	}
	return d
}

func delayed(f func(Call) Reply) func(Call) Reply {
	return func(c Call) Reply {
		r := f(c)
		r.Delay = MarkerDelay(c.Prompt)
		return r
	}
}

// statusRule answers "[status=N]" and "[status=NxK]"; the K count is per
// prompt, so a retried request sees the error K times and then succeeds.
func statusRule() Rule {
	var mu sync.Mutex
	seen := map[string]int{}
	match := func(c Call) bool {
		m := statusMarker().FindStringSubmatch(c.Prompt)
		if m == nil {
			return false
		}
		if m[2] == "" {
			return true
		}
		limit, _ := strconv.Atoi(m[2])
		mu.Lock()
		defer mu.Unlock()
		if seen[c.Prompt] >= limit {
			return false
		}
		seen[c.Prompt]++
		return true
	}
	reply := func(c Call) Reply {
		m := statusMarker().FindStringSubmatch(c.Prompt)
		status, _ := strconv.Atoi(m[1])
		return Reply{Status: status, Delay: MarkerDelay(c.Prompt)}
	}
	return Rule{Name: "status", Match: match, Reply: reply}
}

// ToolMarkers parses the "[tool=Name:arg]" markers of a prompt, in order.
func ToolMarkers(prompt string) []ToolUse {
	var out []ToolUse
	rest := prompt
	for {
		loc := toolMarker().FindStringSubmatchIndex(rest)
		if loc == nil {
			return out
		}
		name := rest[loc[2]:loc[3]]
		rest = rest[loc[1]:]
		arg, n, ok := markerArg(rest)
		if !ok {
			continue
		}
		rest = rest[n:]
		out = append(out, ToolUse{Name: name, Input: toolInput(name, arg)})
	}
}

// markerArg reads a marker argument up to its closing "]": a JSON object when
// it starts with "{" (so it may contain "]"), else plain text. It returns the
// argument, the bytes consumed including the "]", and whether it was closed.
func markerArg(s string) (string, int, bool) {
	if strings.HasPrefix(s, "{") {
		dec := json.NewDecoder(strings.NewReader(s))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil {
			n := int(dec.InputOffset())
			if strings.HasPrefix(s[n:], "]") {
				return s[:n], n + 1, true
			}
		}
	}
	i := strings.IndexByte(s, ']')
	if i < 0 {
		return "", 0, false
	}
	return s[:i], i + 1, true
}

// toolMainField is the input field a plain-text marker argument fills.
var toolMainField = map[string]string{
	"Bash":     "command",
	"Read":     "file_path",
	"Glob":     "pattern",
	"Grep":     "pattern",
	"WebFetch": "url",
}

func toolInput(name, arg string) json.RawMessage {
	if strings.HasPrefix(arg, "{") && json.Valid([]byte(arg)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(arg)) == nil {
			return buf.Bytes()
		}
	}
	field, ok := toolMainField[name]
	if !ok {
		field = "input"
	}
	in := map[string]string{field: arg}
	if name == "Bash" {
		in["description"] = "Run " + arg
	}
	b, _ := json.Marshal(in)
	return b
}

func wantsTool(c Call) bool {
	return len(ToolMarkers(c.Prompt)) > len(c.ToolResults)
}

func toolReply(c Call) Reply {
	tu := ToolMarkers(c.Prompt)[len(c.ToolResults)]
	return Reply{ToolUse: &tu, Delay: MarkerDelay(c.Prompt)}
}
