// Package demo is `fleetd demo`, the newcomer's first command: a whole
// fleetd on one machine with nothing installed (Fabric: the built-in
// herdr-protocol server with real PTY panes, a fake model API and a
// gateway over embedded NATS), agents in their roles (simulated Claude
// Code, or the real Claude Code, Codex, Gemini CLI, OpenCode or Pi found
// on PATH, against the fake API), and a lead fanning tasks out through
// the HTTP shim, with a summary of what happened and how to tap it (Run). `fleetd bench` runs its fabric stage on the same
// Fabric.
//
// It wires concrete parts (gateway, herdrtest, fakeapi, the shim's
// client) but stays a library: Run takes plain Options (flags, an output
// writer, a logger, the version) and returns an error; the CLI that maps
// flags and exit codes is cmd/fleetd's. It must not import cmd, bench,
// or any test-only package (herdrbridge/herdrschema, internal/checkfor,
// the *test helpers but herdrtest): the production binary links it and
// links no `testing`.
package demo
