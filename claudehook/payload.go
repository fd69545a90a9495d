package claudehook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	events "github.com/fleetd/fleetd/events/eventcore"
)

// Hook is a Claude Code hook event name, as Claude spells it in settings
// and in hook_event_name.
type Hook string

// The hooks fleetd installs.
const (
	SessionStart     Hook = "SessionStart"
	UserPromptSubmit Hook = "UserPromptSubmit"
	Stop             Hook = "Stop"
	StopFailure      Hook = "StopFailure"
	Notification     Hook = "Notification"
	SessionEnd       Hook = "SessionEnd"
)

// Hooks lists every hook fleetd installs, in the order a session meets them.
var Hooks = []Hook{SessionStart, UserPromptSubmit, Stop, StopFailure, Notification, SessionEnd}

// Arg is the command-line spelling of h, `fleetd hook <arg>`: stop-failure.
func (h Hook) Arg() string {
	var b strings.Builder
	for i, r := range string(h) {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ParseHook accepts a hook name in either spelling (StopFailure or
// stop-failure, any case), so settings written by hand work too.
func ParseHook(s string) (Hook, error) {
	norm := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	for _, h := range Hooks {
		if strings.ToLower(string(h)) == norm {
			return h, nil
		}
	}
	if h, ok := geminiHooks[norm]; ok {
		return h, nil
	}
	return "", fmt.Errorf("%w %q (want one of %s)", ErrUnknownHook, s, hookArgs())
}

func hookArgs() string {
	args := make([]string, len(Hooks))
	for i, h := range Hooks {
		args[i] = h.Arg()
	}
	return strings.Join(args, ", ")
}

// Payload is the JSON Claude Code writes to a hook's stdin: the union of
// the fields of the hooks fleetd handles (HOOKS.md). Unknown fields are
// ignored; fields a hook does not send stay empty.
type Payload struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	PromptID       string `json:"prompt_id"`
	// TurnID is Codex's join key of a turn's UserPromptSubmit and Stop,
	// where Claude Code has prompt_id; ParsePayload fills PromptID with it.
	TurnID         string `json:"turn_id"`
	PermissionMode string `json:"permission_mode"`
	// SessionStart: source ("startup", "resume", …) and model.
	Source string `json:"source"`
	Model  string `json:"model"`
	// UserPromptSubmit: the prompt text.
	Prompt string `json:"prompt"`
	// Stop and StopFailure: the reply (or, on failure, the error text
	// Claude showed), and StopFailure's error.
	LastAssistantMessage string          `json:"last_assistant_message"`
	StopHookActive       bool            `json:"stop_hook_active"`
	Error                json.RawMessage `json:"error"`
	// Notification: why Claude needs the user.
	NotificationType string `json:"notification_type"`
	Message          string `json:"message"`
	// SessionEnd: why the session ended.
	Reason string `json:"reason"`
}

// ErrorText is StopFailure's error as text, whatever JSON shape it came in.
func (p Payload) ErrorText() string {
	raw := bytes.TrimSpace(p.Error)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && (obj.Type != "" || obj.Message != "") {
		return strings.TrimPrefix(obj.Type+": "+obj.Message, ": ")
	}
	return string(raw)
}

// ParsePayload decodes a hook payload leniently: unknown fields are
// ignored, but it must be one JSON object.
func ParsePayload(b []byte) (Payload, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Payload{}, fmt.Errorf("%w: stdin is empty", ErrPayload)
	}
	if b[0] != '{' {
		return Payload{}, fmt.Errorf("%w: stdin is not a JSON object", ErrPayload)
	}
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return Payload{}, fmt.Errorf("%w: %v", ErrPayload, err)
	}
	// The payload comes from the agent's side (inside its sandbox, when
	// it has one), and its session id goes on to a launch: a restart or a
	// resumed session types --resume <id>. Claude Code's ids are UUIDs;
	// anything else is refused here, and again where it would be used.
	if p.SessionID != "" {
		if err := events.ValidSessionID(p.SessionID); err != nil {
			return Payload{}, fmt.Errorf("%w: session_id: %w", ErrPayload, err)
		}
	}
	if p.PromptID == "" {
		p.PromptID = p.TurnID
	}
	fillGemini(b, &p)
	return p, nil
}
