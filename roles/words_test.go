package roles_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// Every character a terminal's line editor acts on is refused in a launch
// word: C0 (tab and newline too), DEL, C1, and bytes that are not UTF-8.
func TestALaunchWordHoldsNoControlCharacter(t *testing.T) {
	for _, bad := range []string{"m1\x15echo X > /tmp/marker #", "m\t1", "m\n", "m\r", "m\x1b[201~", "m\x7f", "m\u0085", "m\u009b", "m\xff", "\x00"} {
		if err := roles.CheckWord("model", bad); !errors.Is(err, roles.ErrControlChar) {
			t.Errorf("CheckWord(%q) = %v, want ErrControlChar", bad, err)
		}
	}
	for _, good := range []string{"", "claude-opus-4-1", "m1 with spaces 'and' \"quotes\" $HOME", "modèle-é", "\uFFFD"} {
		if err := roles.CheckWord("model", good); err != nil {
			t.Errorf("CheckWord(%q) = %v, want nil", good, err)
		}
	}
	if err := roles.CheckWords("launch", []string{"claude", "--model", "a\x15b"}); !errors.Is(err, roles.ErrControlChar) {
		t.Errorf("CheckWords = %v, want ErrControlChar", err)
	}
}

// A spawn's working directory is an existing directory under the role's
// roots (by default fleetd's home, working and temporary directories),
// never / or /etc, also not through a symlink.
func TestASpawnsCwdIsADirectoryTheRoleAllows(t *testing.T) {
	var r roles.Role
	tmp := t.TempDir()
	if err := r.CheckCwd(tmp); err != nil {
		t.Errorf("CheckCwd(a temporary directory) = %v, want nil", err)
	}
	link := filepath.Join(tmp, "etc")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/", "/etc", "//", "/etc/..", link, file, filepath.Join(tmp, "missing"), "relative/dir", tmp + "\x15"} {
		if err := r.CheckCwd(bad); !errors.Is(err, roles.ErrCwd) {
			t.Errorf("CheckCwd(%q) = %v, want ErrCwd", bad, err)
		}
	}
	// The role's own roots replace the defaults.
	r.CwdRoots = []string{filepath.Join(tmp, "work")}
	if err := os.MkdirAll(filepath.Join(tmp, "work", "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckCwd(filepath.Join(tmp, "work", "a")); err != nil {
		t.Errorf("CheckCwd(under cwd_roots) = %v", err)
	}
	if err := r.CheckCwd(tmp); !errors.Is(err, roles.ErrCwd) {
		t.Errorf("CheckCwd(outside cwd_roots) = %v, want ErrCwd", err)
	}
	if _, err := roles.Parse([]byte(`{"roles":{"w":{"cwd_roots":["rel"]}}}`)); err == nil {
		t.Error("a relative cwd_roots entry was accepted")
	}
}
