package fakeapi

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// Rule answers the calls it matches. Rules are tried in order and the first
// match wins; Match is called at most once per request and may keep state
// (it must then be safe for concurrent use).
type Rule struct {
	// Name identifies the rule in recorded requests (Request.Rule).
	Name string
	// Match decides whether this rule answers the call.
	Match func(Call) bool
	// Reply builds the answer.
	Reply func(Call) Reply
}

// Reply is a rule's answer to one call.
type Reply struct {
	// Text is the assistant's text block; may be empty when ToolUse is set.
	Text string
	// ToolUse, when set, adds a tool call after the text: a tool_use block,
	// a Responses function_call item, a Chat tool_calls entry or a Gemini
	// functionCall part.
	ToolUse *ToolUse
	// StopReason defaults to "tool_use" with a ToolUse and "end_turn"
	// without; only the Messages API carries it.
	StopReason string
	// Delay holds the answer back this long.
	Delay time.Duration
	// Status, when not 0 or 200, answers this HTTP status with the
	// protocol's error JSON (Anthropic, OpenAI or Google) instead of a
	// message.
	Status int
	// Error is the error message for Status; a default one is used if empty.
	Error string
}

// ToolUse is a tool call the fake model makes.
type ToolUse struct {
	// ID is the tool_use id; a fresh "toolu_…" id when empty.
	ID string
	// Name is the tool's name, e.g. "Bash".
	Name string
	// Input is the tool's JSON input; {} when empty.
	Input json.RawMessage
}

// Contains matches calls whose prompt contains sub.
func Contains(sub string) func(Call) bool {
	return func(c Call) bool { return strings.Contains(c.Prompt, sub) }
}

// MatchRegexp matches calls whose prompt matches re.
func MatchRegexp(re *regexp.Regexp) func(Call) bool {
	return func(c Call) bool { return re.MatchString(c.Prompt) }
}

// MatchPrompt adapts a predicate on the prompt text to a Match function.
func MatchPrompt(f func(prompt string) bool) func(Call) bool {
	return func(c Call) bool { return f(c.Prompt) }
}

// Always matches every call, for catch-all rules.
func Always(Call) bool { return true }

// Say answers with a fixed text.
func Say(text string) func(Call) Reply {
	return func(Call) Reply { return Reply{Text: text} }
}

// Echo answers "ECHO: <prompt>", followed by one "TOOL_RESULT: <text>" line
// per tool result the call carries.
func Echo(c Call) Reply {
	var b strings.Builder
	b.WriteString("ECHO: ")
	b.WriteString(c.Prompt)
	for _, r := range c.ToolResults {
		b.WriteString("\nTOOL_RESULT: ")
		b.WriteString(r.Text)
	}
	return Reply{Text: b.String()}
}
