package fakeapi

import (
	"os"
	"os/exec"
)

// PiVersion is the Pi coding agent release (@mariozechner/pi-coding-agent)
// fleetd's pi kind was measured against and that .ci/install-pi.sh
// installs. Pi speaks Anthropic Messages to a provider whose baseUrl is
// the fake's URL without /v1 (the Anthropic SDK appends /v1/messages).
const PiVersion = "0.73.1"

// RequirePi returns the path of the pi executable on PATH, as
// RequireClaude does for claude.
func RequirePi(tb TB) string {
	tb.Helper()
	bin, err := exec.LookPath("pi")
	if err == nil {
		return bin
	}
	msg := "pi not on PATH: run `export PATH=\"$(.ci/install-pi.sh):$PATH\"` to install Pi " + PiVersion
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}
