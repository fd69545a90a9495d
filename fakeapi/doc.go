// Package fakeapi is a fake of the Anthropic Messages API that answers by rule
// from the user's prompt, so the real Claude Code CLI can run offline and
// deterministically in fleetd's end-to-end tests and in `fleetd demo`.
//
// It serves POST /v1/messages (streaming SSE and plain JSON, any query string),
// POST /v1/messages/count_tokens and GET /v1/models, and a 404 error JSON for
// everything else. Every request is recorded (Server.Requests, Server.Wait) so
// a test can assert what the model saw.
//
// # The prompt
//
// The prompt is the last text block of a user message that does not start with
// <system-reminder>; content may be a string or an array of blocks, and a
// trailing message may have role system. Tool results that come after the
// prompt (the next rounds of an agentic loop) are in Call.ToolResults.
//
// # Default rules
//
// DefaultRules answers as follows, first match wins:
//
//  1. auxiliary: Claude Code's background calls (quota probes with max_tokens 1,
//     structured-output calls such as session titles, the auto-mode permission
//     classifier, which is told "<block>no</block>" so the tool runs) get a
//     short harmless answer and never reach the rules below (see IsAuxiliary).
//  2. status: "[status=529]" anywhere in the prompt answers that HTTP status
//     with an Anthropic error JSON (400 invalid_request_error, 401
//     authentication_error, 403 permission_error, 404 not_found_error, 413
//     request_too_large, 429 rate_limit_error, 500 api_error, 529
//     overloaded_error). "[status=529x2]" fails only the first two requests
//     carrying that prompt; later ones fall through to the next rules.
//  3. tool: "[tool=Bash:echo hi]" answers a tool_use block (stop_reason
//     tool_use). The argument is the tool's JSON input when it starts with "{",
//     else the main field of a known tool: Bash command, Read file_path, Glob
//     and Grep pattern, WebFetch url; other tools get {"input": arg}. Several
//     markers run one after another, one per round, until each has a result.
//  4. echo: "ECHO: <prompt>"; once the turn carries tool results it is
//     "ECHO: <prompt>" followed by one "TOOL_RESULT: <text>" line per result, so
//     a test can see the loop closed.
//
// "[delay=2s]" (any time.ParseDuration value) anywhere in the prompt delays
// every non-auxiliary answer of the turn by that long; the wait ends early when
// the request is cancelled or the server closes.
//
// # Running the real Claude Code against it
//
// ClaudeVars, ClaudeEnv, WriteClaudeHome and ClaudeSettings set up an isolated
// home, environment and --settings file for the real CLI against a fake, for
// tests (SetupClaude, RequireClaude) and the demo. Observed with 2.1.328: an
// API error ends a turn with a StopFailure hook instead of Stop; a tool call
// waiting for permission raises a Notification (permission_prompt).
//
// fakeapi imports no other fleetd package.
package fakeapi
