package doctor

import (
	"regexp"
	"sync"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/roles"
)

// TestedCLI is the agent CLI of a kind and the release of it fleetd was
// measured against: the one its end-to-end tests run (.ci/install-<kind>.sh
// installs it; the versions themselves live beside the fakes those tests
// drive, in package fakeapi, so there is one place to change a pin).
type TestedCLI struct {
	// Kind is the roles' kind (roles.Kinds).
	Kind string
	// Name is what people call it.
	Name string
	// Bin is the executable's name, the first word of the kind's
	// default command.
	Bin string
	// Version is the release fleetd was tested with.
	Version string
	// Package is the npm package that installs it.
	Package string
	// Env is what `<bin> --version` needs besides this environment (Pi
	// checks for updates on the network unless it is offline).
	Env []string
}

// Install is the command that installs the tested release.
func (t TestedCLI) Install() string {
	return "npm install -g " + t.Package + "@" + t.Version
}

// Tested lists every kind's CLI; a test keeps it whole (every roles.Kinds)
// and in step with the .ci install scripts.
var Tested = []TestedCLI{
	{Kind: roles.KindClaude, Name: "Claude Code", Bin: "claude", Version: fakeapi.ClaudeVersion, Package: "@anthropic-ai/claude-code",
		Env: []string{"DISABLE_AUTOUPDATER=1"}},
	{Kind: roles.KindCodex, Name: "Codex CLI", Bin: "codex", Version: fakeapi.CodexVersion, Package: "@openai/codex"},
	{Kind: roles.KindGemini, Name: "Gemini CLI", Bin: "gemini", Version: fakeapi.GeminiVersion, Package: "@google/gemini-cli"},
	{Kind: roles.KindOpenCode, Name: "OpenCode", Bin: "opencode", Version: fakeapi.OpenCodeVersion, Package: "opencode-ai"},
	{Kind: roles.KindPi, Name: "Pi", Bin: "pi", Version: fakeapi.PiVersion, Package: "@mariozechner/pi-coding-agent",
		Env: []string{"PI_OFFLINE=1"}},
}

// TestedFor is kind's entry of Tested.
func TestedFor(kind string) (TestedCLI, bool) {
	for _, t := range Tested {
		if t.Kind == kind {
			return t, true
		}
	}
	return TestedCLI{}, false
}

// versionRE finds a release number in what `--version` prints: Claude
// Code says "2.1.328 (Claude Code)", Codex "codex-cli 0.169.0", the
// others the bare number (Pi on stderr).
var versionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?\b`)
})

// ParseVersion is the first release number in out, or "".
func ParseVersion(out string) string { return versionRE().FindString(out) }
