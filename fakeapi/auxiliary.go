package fakeapi

import (
	"encoding/json"
	"strings"
)

// monitorSignature starts the system prompt of Claude Code's auto-mode
// permission classifier, which must answer "<block>no</block>" to allow.
const monitorSignature = "security monitor for autonomous AI coding agents"

// IsAuxiliary tells whether a call is one of an agent CLI's background calls
// rather than a turn of the conversation: a quota or model probe (max_tokens
// 1), a structured-output call (Claude Code's session title, Gemini CLI's
// model router and next-speaker check), Claude Code's auto-mode permission
// classifier, a title or summary call that quotes the user's prompt (Codex's
// thread title, OpenCode's session title, Gemini CLI's session summary), or a
// tool-less call that quotes the session inside <session> or <transcript>
// tags (and so carries the user's markers).
//
// Calls Claude Code forks from the conversation (summaries, suggestions) end
// with their own instruction as the prompt; the echo rule answers them
// harmlessly. Setting CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 turns most
// of them off.
func IsAuxiliary(c Call) bool {
	switch {
	case c.MaxTokens == 1, c.Schema != nil, strings.Contains(c.System, monitorSignature),
		c.side, sideCall(c.Prompt):
		return true
	case len(c.Tools) == 0:
		return strings.Contains(c.Prompt, "<session>") || strings.Contains(c.Prompt, "<transcript>")
	}
	return false
}

func auxiliaryReply(c Call) Reply {
	switch {
	case c.Schema != nil:
		return Reply{Text: string(SchemaExample(c.Schema))}
	case strings.Contains(c.System, monitorSignature):
		return Reply{Text: "<block>no</block>"}
	default:
		return Reply{Text: "ok"}
	}
}

// SchemaExample returns a small JSON value that satisfies a simple JSON
// schema: objects with their required properties (all of them when none is
// required), the first enum value, "fakeapi" for strings, 0, false, [] and
// null. Type names are matched in any case, since Gemini's schemas spell them
// "OBJECT" and "STRING". It is the answer to structured-output calls such as
// title generation.
func SchemaExample(schema json.RawMessage) json.RawMessage {
	var s jsonSchema
	if err := json.Unmarshal(schema, &s); err != nil {
		return json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(s.example())
	return b
}

type jsonSchema struct {
	Type       any                   `json:"type"`
	Enum       []any                 `json:"enum"`
	Const      any                   `json:"const"`
	Properties map[string]jsonSchema `json:"properties"`
	Required   []string              `json:"required"`
	AnyOf      []jsonSchema          `json:"anyOf"`
}

func (s jsonSchema) example() any {
	switch {
	case s.Const != nil:
		return s.Const
	case len(s.Enum) > 0:
		return s.Enum[0]
	case len(s.AnyOf) > 0:
		return s.AnyOf[0].example()
	}
	typ, _ := s.Type.(string)
	if types, ok := s.Type.([]any); ok && len(types) > 0 {
		typ, _ = types[0].(string)
	}
	switch strings.ToLower(typ) {
	case "string":
		return "fakeapi"
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	obj := map[string]any{}
	keys := s.Required
	if len(keys) == 0 {
		for k := range s.Properties {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		obj[k] = s.Properties[k].example()
	}
	return obj
}
