package agentapi

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// TestedVersion is the agentapi release this package was measured
// against (the vendored commit 00ff7ff, built by .ci/install-agentapi.sh).
// MinVersion is the oldest Start accepts: the API this package relies on
// (the raw message type, the transport field, the /internal/screen
// stream) is 0.12's; an older agentapi may lack or shape it otherwise.
const (
	TestedVersion = "0.12.1"
	MinVersion    = "0.12.0"
)

// installHint says where agentapi comes from, in every ErrNotInstalled.
const installHint = "install agentapi from https://github.com/coder/agentapi/releases, " +
	"or in this repository run `export PATH=\"$(.ci/install-agentapi.sh):$PATH\"` (builds " + TestedVersion + " from ../shared/vendor)"

// LookPath finds the agentapi binary: bin as given when it holds a slash,
// else on PATH ("" means "agentapi").
func LookPath(bin string) (string, error) {
	if bin == "" {
		bin = "agentapi"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v; %s", ErrNotInstalled, bin, err, installHint)
	}
	return path, nil
}

// CheckVersion runs `bin --version` and returns the version it reports,
// or ErrVersion when that is older than MinVersion or unreadable.
func CheckVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := withDefault(ctx, DefaultTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s --version: %v: %s", ErrVersion, bin, err, truncate(out, 300))
	}
	// cobra prints "agentapi version 0.12.1".
	text := strings.TrimSpace(string(out))
	v, ok := strings.CutPrefix(text, "agentapi version ")
	if !ok || !versionAtLeast(v, MinVersion) {
		return "", fmt.Errorf("%w: %s reports %q, want agentapi %s or later (measured with %s)", ErrVersion, bin, truncate([]byte(text), 200), MinVersion, TestedVersion)
	}
	return v, nil
}

// versionAtLeast compares dotted numeric versions ("0.12.1"); a
// pre-release or build suffix ("0.13.0-rc1") counts as its release.
func versionAtLeast(v, min string) bool {
	a, ok1 := parseVersion(v)
	b, ok2 := parseVersion(min)
	if !ok1 || !ok2 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+ "); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}
