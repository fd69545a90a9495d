package worktreetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git runs git in dir (the current directory when dir is empty), with no
// system config and in the C locale, and returns its output trimmed; it
// fails tb when git fails.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo makes a repository at path with a main checkout on branch main
// and one commit holding shared.txt ("from main\n"), by a configured
// user, so tests can commit in it and in its worktrees.
func NewRepo(tb testing.TB, path string) {
	tb.Helper()
	Git(tb, "", "init", "-q", "-b", "main", path)
	Git(tb, path, "config", "user.name", "Test")
	Git(tb, path, "config", "user.email", "test@example.com")
	Write(tb, path, "shared.txt", "from main\n")
	Git(tb, path, "add", "-A")
	Git(tb, path, "commit", "-q", "-m", "init")
}

// Write writes text to the file name in dir (a checkout, a worktree),
// as a test's change to it; it fails tb when it cannot.
func Write(tb testing.TB, dir, name, text string) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}
