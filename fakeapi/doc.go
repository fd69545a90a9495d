// Package fakeapi is a fake model API that answers by rule from the user's
// prompt, so real agent CLIs (Claude Code, Codex, OpenCode, Gemini CLI, Pi)
// can run offline and deterministically in fleetd's end-to-end tests and in
// `fleetd demo`.
//
// It speaks four protocols, streaming (SSE) and plain JSON, with each one's
// own usage fields and error JSON:
//
//   - Anthropic Messages (Claude Code, OpenCode, Pi): POST /v1/messages (any
//     query string) and POST /v1/messages/count_tokens.
//   - OpenAI Responses (Codex): POST …/responses, streamed as response.created,
//     response.in_progress, then per output item output_item.added,
//     content_part.added, output_text.delta…, output_text.done,
//     content_part.done, output_item.done, and last response.completed with
//     the usage.
//   - OpenAI Chat Completions: POST …/chat/completions, streamed as data-only
//     chat.completion.chunk frames (role, content deltas, a finishing chunk
//     carrying usage) and "data: [DONE]".
//   - Gemini (Gemini CLI): POST …/models/<model>:streamGenerateContent
//     (?alt=sse gives SSE frames ending in \r\n\r\n, the last with
//     finishReason and usageMetadata; without it, one JSON array),
//     :generateContent and :countTokens.
//
// GET /v1/models lists Config.Models in a shape both Anthropic and OpenAI
// clients read; GET /v1beta/models in Gemini's. Everything else gets a 404
// error JSON. Every request is recorded (Server.Requests, Server.Wait) with
// its Protocol, so a test can assert what the model saw. Each protocol is a
// small codec onto the one Call and Reply, so the rules below apply to all.
//
// # The prompt
//
// Anthropic: the last text block of a user message that does not start with
// <system-reminder>; content may be a string or an array of blocks, and a
// trailing message may have role system. Files Claude Code attached for an
// @-mention are in Call.Attached.
//
// Responses: the last input_text of a user input item, skipping the context
// Codex injects as user messages (<environment_context>, "# AGENTS.md …",
// <user_instructions>); developer messages and instructions are the System.
// Chat Completions: the last text of a user message (a string or parts).
// Gemini: the text parts of the last user content, joined, skipping Gemini
// CLI's <session_context>; the files an @-mention expanded after
// "--- Content from referenced files ---" are in Call.Attached.
//
// Tool results that come after the prompt (the next rounds of an agentic
// loop: tool_result blocks, function_call_output items, tool messages,
// functionResponse parts) are in Call.ToolResults.
//
// # Default rules
//
// DefaultRules answers as follows, first match wins:
//
//  1. auxiliary: the CLIs' background calls (quota probes with max_tokens 1,
//     structured-output calls such as Claude Code's session titles and Gemini
//     CLI's model router, which get JSON filling their schema; Claude Code's
//     auto-mode permission classifier, which is told "<block>no</block>" so
//     the tool runs; Codex's and OpenCode's title calls and Gemini CLI's
//     session summary, which quote the prompt) get a short harmless answer
//     and never reach the rules below (see IsAuxiliary).
//  2. status: "[status=529]" anywhere in the prompt answers that HTTP status
//     with the protocol's error JSON: OpenAI's error type and code, Google's
//     error status (429 RESOURCE_EXHAUSTED, …), or Anthropic's (400 invalid_request_error, 401
//     authentication_error, 403 permission_error, 404 not_found_error, 413
//     request_too_large, 429 rate_limit_error, 500 api_error, 529
//     overloaded_error). "[status=529x2]" fails only the first two requests
//     carrying that prompt; later ones fall through to the next rules.
//  3. tool: "[tool=Bash:echo hi]" answers a tool call: a tool_use block
//     (stop_reason tool_use), a Responses function_call item, a Chat
//     tool_calls entry (finish_reason tool_calls) or a Gemini functionCall
//     part. The tool names are the client's own (Codex's "shell", Gemini
//     CLI's "run_shell_command"); a tool Codex offers in a namespace (an MCP
//     server's, "mcp__fleetd") is named whole, "mcp__fleetd__send", and
//     answered in its namespace. The argument is the tool's JSON input when it starts with "{",
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
