package agentapi

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotInstalled: the agentapi binary is not on PATH (or not at the
	// configured path). The error says how to install it.
	ErrNotInstalled = errors.New("agentapi not installed")
	// ErrVersion: the binary's version is not one this package was
	// measured against (see MinVersion); its API may differ.
	ErrVersion = errors.New("unsupported agentapi version")
	// ErrBusy: agentapi refused a user message because the agent is not
	// "stable" (waiting for input). Nothing was typed.
	ErrBusy = errors.New("agent is not waiting for input")
	// ErrInvalidMessage: agentapi refused a message as empty.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrExited: the agentapi server process exited (with it, its agent).
	ErrExited = errors.New("agentapi server exited")
	// ErrPortTaken: agentapi could not bind its port. Start retries
	// another one, so callers see it only when every attempt failed.
	ErrPortTaken = errors.New("agentapi port taken")
)

// APIError is an error answer of agentapi's API (huma's problem JSON). Is
// maps the known ones onto this package's sentinels, so callers never
// match agentapi's wording themselves.
type APIError struct {
	// Op is the request, e.g. "POST /message".
	Op string
	// Status is the HTTP status; Title and Detail huma's fields.
	Status        int
	Title, Detail string
	// Messages are the messages of the "errors" array, where agentapi puts
	// the cause (e.g. "failed to send message: message can only be sent
	// when the agent is waiting for user input").
	Messages []string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("agentapi %s: %d %s", e.Op, e.Status, e.Title)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if len(e.Messages) > 0 {
		msg += " (" + strings.Join(e.Messages, "; ") + ")"
	}
	return msg
}

// Is translates agentapi's error messages (lib/screentracker's validation
// errors, as of 0.12.1) to sentinels, here and only here.
func (e *APIError) Is(target error) bool {
	all := strings.Join(e.Messages, "\n")
	switch target {
	case ErrBusy:
		return strings.Contains(all, "waiting for user input")
	case ErrInvalidMessage:
		return strings.Contains(all, "must not be empty") || strings.Contains(all, "must be trimmed")
	}
	return false
}
