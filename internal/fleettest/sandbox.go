package fleettest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireBwrap returns the path of bubblewrap, once it has run a trivial
// sandbox here. Without it (or where it cannot create namespaces) the
// test is skipped, unless CI=true, where CI installs it and a missing or
// broken one is a failure.
func RequireBwrap(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("bwrap")
	if err == nil {
		var out []byte
		if out, err = exec.Command(bin, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true").CombinedOutput(); err != nil {
			err = &bwrapError{strings.TrimSpace(string(out)), err}
		}
	}
	if err == nil {
		return bin
	}
	msg := "bubblewrap is needed (apt-get install bubblewrap): " + err.Error()
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

type bwrapError struct {
	out string
	err error
}

func (e *bwrapError) Error() string {
	return "bwrap does not run here: " + e.err.Error() + ": " + e.out
}

// OutsideTmp returns a new directory outside /tmp, removed when the test
// ends: a sandbox with a private /tmp (the shipped bubblewrap profile)
// hides everything under the host's /tmp, so what a test wants the
// sandbox to see read-only — a repository, a home — must live elsewhere.
// It is under $FLEET_TEST_DIR when set, else the user's cache directory.
func OutsideTmp(tb testing.TB) string {
	tb.Helper()
	root := os.Getenv("FLEET_TEST_DIR")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			tb.Fatal(err)
		}
		root = filepath.Join(cache, "fleetd-tests")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, strings.NewReplacer("/", "-", " ", "-").Replace(tb.Name())+"-")
	if err != nil {
		tb.Fatal(err)
	}
	if strings.HasPrefix(dir, "/tmp/") {
		tb.Fatalf("%s is under /tmp: set FLEET_TEST_DIR to a directory elsewhere", dir)
	}
	tb.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}
