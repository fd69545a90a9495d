package fakeapi

import (
	"os"
	"os/exec"
)

// OpenCodeVersion is the OpenCode release fleetd's opencode kind was
// measured against and that .ci/install-opencode.sh installs. OpenCode
// speaks Anthropic Messages to this fake (its @ai-sdk/anthropic provider).
const OpenCodeVersion = "1.18.33"

// RequireOpenCode returns the path of the opencode executable on PATH, as
// RequireClaude does for claude.
func RequireOpenCode(tb TB) string {
	tb.Helper()
	bin, err := exec.LookPath("opencode")
	if err == nil {
		return bin
	}
	msg := "opencode not on PATH: run `export PATH=\"$(.ci/install-opencode.sh):$PATH\"` to install OpenCode " + OpenCodeVersion
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}
