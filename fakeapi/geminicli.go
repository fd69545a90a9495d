package fakeapi

import (
	"os"
	"os/exec"
)

// GeminiVersion is the Gemini CLI release fleetd's gemini kind was
// measured against and that .ci/install-gemini.sh installs.
const GeminiVersion = "0.61.0"

// RequireGemini returns the path of the gemini executable on PATH, as
// RequireClaude does for claude: without one it skips the test, unless
// CI=true, where a missing CLI is a failure.
func RequireGemini(tb TB) string {
	tb.Helper()
	bin, err := exec.LookPath("gemini")
	if err == nil {
		return bin
	}
	msg := "gemini not on PATH: run `export PATH=\"$(.ci/install-gemini.sh):$PATH\"` to install Gemini CLI " + GeminiVersion
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}
