package herdrbridge

import (
	"errors"
	"fmt"
)

// APIError is an error line returned by herdr: {"error":{"code","message"}}.
// Compare it with errors.Is against the sentinels below, which match on Code
// alone, so callers branch on herdr's stable codes and never on messages.
type APIError struct {
	// Code is herdr's machine-readable error code, e.g. "pane_not_found".
	Code string
	// Message is herdr's human-readable explanation; empty on sentinels.
	Message string
}

// Error formats the code and, when present, herdr's message.
func (e *APIError) Error() string {
	if e.Message == "" {
		return "herdr: " + e.Code
	}
	return fmt.Sprintf("herdr: %s: %s", e.Code, e.Message)
}

// Is reports whether target is an *APIError with the same Code, so that
// errors.Is(err, ErrPaneNotFound) works on any error herdr returned.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Sentinels for the herdr error codes fleetd acts on. Each matches, with
// errors.Is, every *APIError carrying that code.
var (
	// ErrInvalidRequest: the line did not parse as a request (bad JSON,
	// unknown method, missing field, or a value outside an enum such as
	// report_agent state "done"). herdr answers it with an empty id.
	ErrInvalidRequest = &APIError{Code: "invalid_request"}
	// ErrInvalidParams: the request parsed but a parameter was rejected.
	ErrInvalidParams = &APIError{Code: "invalid_params"}
	// ErrInternal: herdr failed to encode its own answer.
	ErrInternal = &APIError{Code: "internal_error"}
	// ErrServerUnavailable: herdr's app thread is gone (shutting down).
	ErrServerUnavailable = &APIError{Code: "server_unavailable"}
	// ErrTimeout: a server-side wait (agent.wait, events.wait, agent.prompt
	// with wait) ran out of its timeout_ms. A client-side deadline is
	// reported as context.DeadlineExceeded instead.
	ErrTimeout = &APIError{Code: "timeout"}
	// ErrNotImplemented: this herdr build lacks the method.
	ErrNotImplemented = &APIError{Code: "not_implemented"}
	// ErrPaneNotFound: no pane with that id (it closed, or never existed).
	ErrPaneNotFound = &APIError{Code: "pane_not_found"}
	// ErrWorkspaceNotFound: no workspace with that id.
	ErrWorkspaceNotFound = &APIError{Code: "workspace_not_found"}
	// ErrTabNotFound: no tab with that id.
	ErrTabNotFound = &APIError{Code: "tab_not_found"}
	// ErrInvalidKey: send_keys named a key herdr cannot encode; nothing was written.
	ErrInvalidKey = &APIError{Code: "invalid_key"}
	// ErrInvalidEnv: an env key was empty or held '=' or NUL, or a value held NUL.
	ErrInvalidEnv = &APIError{Code: "invalid_env"}
	// ErrPaneSendFailed: herdr could not write to the pane's terminal.
	ErrPaneSendFailed = &APIError{Code: "pane_send_failed"}
	// ErrAgentNotFound: the agent target matched no live agent pane.
	ErrAgentNotFound = &APIError{Code: "agent_not_found"}
	// ErrAgentTargetAmbiguous: the agent name matched more than one pane.
	ErrAgentTargetAmbiguous = &APIError{Code: "agent_target_ambiguous"}
	// ErrAgentNotReady: the pane has no recognised agent in the foreground
	// (yet, or any more), so agent.prompt refused to type.
	ErrAgentNotReady = &APIError{Code: "agent_not_ready"}
	// ErrAgentNotRunning: a wait ended because the agent went away.
	ErrAgentNotRunning = &APIError{Code: "agent_not_running"}
	// ErrAgentNotIdle: the operation needs an idle agent.
	ErrAgentNotIdle = &APIError{Code: "agent_not_idle"}
	// ErrAgentBlocked: the agent shows a permission or select form; typing
	// now would answer that form instead of prompting (herdr 0.8.2+).
	ErrAgentBlocked = &APIError{Code: "agent_blocked"}
	// ErrAgentPromptStalled: agent.prompt with wait saw no state change
	// within 5 s, the signature of an Enter that was swallowed.
	ErrAgentPromptStalled = &APIError{Code: "agent_prompt_stalled"}
	// ErrEmptyAgentPrompt: agent.prompt with empty text.
	ErrEmptyAgentPrompt = &APIError{Code: "empty_agent_prompt"}
	// ErrInvalidRegex: an output_matched subscription had a bad regex.
	ErrInvalidRegex = &APIError{Code: "invalid_regex"}
)

// ErrNotRunning means the socket could not be dialled: no herdr server is
// listening at the resolved path. It mirrors the herdr CLI's own
// server_not_running, which is generated client-side too.
var ErrNotRunning = errors.New("herdr server not running")

// ErrProtocolMismatch means herdr speaks a protocol version other than
// Protocol. The wrapping error names both versions.
var ErrProtocolMismatch = errors.New("herdr protocol mismatch")

// ErrBadResponse means herdr's answer broke the wire contract: not JSON, the
// wrong id, the wrong result type, or the connection closed without a line.
var ErrBadResponse = errors.New("malformed herdr response")

// ErrDisconnected means a subscription's connection ended without Close
// being called: herdr exited, restarted, or dropped a slow reader. The
// remedy is to re-sync with a snapshot and subscribe again.
var ErrDisconnected = errors.New("herdr subscription disconnected")

// ErrAgentExists means a spawn or adoption named an agent that is already
// registered and has not exited: agent ids are unique fleet-wide.
var ErrAgentExists = errors.New("agent already registered")

// ErrNoResume means a spawn asked to resume a Claude session with a role
// whose command has no {resume} placeholder and is not claude.
var ErrNoResume = errors.New("role command cannot resume a session")

// ErrPaneOwned means an adoption named a pane another live agent owns.
var ErrPaneOwned = errors.New("pane already belongs to an agent")

// ErrBridgeRunning means Run was called on a Bridge that is running or ran.
var ErrBridgeRunning = errors.New("herdr bridge already running")

// ErrNoCredentials means a spawn named an agent that has no NATS key of its
// own while the bridge hands panes per-agent keys (Launch.AgentCreds, under
// 'fleetd auth'): its hooks could not report, and its gateway may not
// register it.
var ErrNoCredentials = errors.New("agent has no NATS credentials of its own")
