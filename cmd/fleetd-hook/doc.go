// Command fleetd-hook is fleetd's Claude Code hook as a binary of its own:
// `fleetd-hook <event>` does what `fleetd hook <event>` does — the same
// events and payloads appended straight to NATS, the same credentials,
// the spool when NATS does not answer, exit 0 whatever happens — through
// the same code (claudehook.Invocation).
//
// It exists to start fast. Claude Code waits for each hook and runs two a
// turn; the whole fleetd binary spends most of a hook's time starting:
// loading 45 MB and initialising everything it links (nats-server,
// prometheus, the dashboard, kong…). This one links claudehook and what
// it imports, nothing else: it must not import any fleetd package but
// claudehook (imports_test.go). fleetd names it in an agent's hooks
// settings when it sits next to the fleetd executable
// (claudehook.HookBeside); `go build -o bin/ ./cmd/...` puts it there.
//
// Usage: fleetd-hook EVENT [--timeout 2s] [--no-herdr]. EVENT is
// session-start, user-prompt-submit, stop, stop-failure, notification or
// session-end (or Claude's names). The spool is replayed by the next hook,
// by the gateway, and by `fleetd hook replay`.
package main
