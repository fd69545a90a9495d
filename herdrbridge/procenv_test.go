package herdrbridge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProc writes /proc/<pid>/{environ,stat,cmdline} for one process of
// pane w1:p1 of the herdr at /sock.
func fakeProc(t *testing.T, root string, pid, ppid, pgrp, tpgid int, comm string, argv ...string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"environ": "HERDR_PANE_ID=w1:p1\x00HERDR_SOCKET_PATH=/sock\x00",
		"stat":    fmt.Sprintf("%d (%s) S %d %d %d 34816 %d 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d", pid, comm, ppid, pgrp, pgrp, tpgid, 5000+pid),
		"cmdline": strings.Join(argv, "\x00") + "\x00",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPaneShowsShell(t *testing.T) {
	tests := []struct {
		name         string
		procs        func(t *testing.T, root string)
		shell, known bool
	}{
		{"the agent exited: its shell is in the foreground", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 100, "bash", "bash")
		}, true, true},
		{"a login shell counts too", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 100, "zsh", "-zsh", "-l")
		}, true, true},
		{"claude runs in the foreground", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 200, "bash", "bash")
			fakeProc(t, r, 200, 100, 200, 200, "claude", "claude", "--settings", "s.json")
		}, false, true},
		{"a wrapper runs in the foreground", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 200, "sh", "/bin/sh")
			fakeProc(t, r, 200, 100, 200, 200, "bwrap", "bwrap", "--ro-bind", "/", "/", "claude")
		}, false, true},
		{"the pane runs a script, not a shell", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 100, "sh", "sh", "-c", "while :; do read l; done")
		}, false, true},
		{"nothing of the pane is visible", func(t *testing.T, r string) {}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.procs(t, root)
			shell, known := new(paneRoots).showsShell(root, "/sock", "w1:p1")
			if shell != tt.shell || known != tt.known {
				t.Errorf("showsShell = %v, %v; want %v, %v", shell, known, tt.shell, tt.known)
			}
		})
	}
}

// The check before every turn finds the pane's first process once and
// then reads only its own files: it follows that process (claude exits,
// the shell is back in the foreground) and notices when the pid now
// names another process.
func TestThePanesFirstProcessIsRememberedWhileItLives(t *testing.T) {
	root := t.TempDir()
	fakeProc(t, root, 100, 1, 100, 200, "bash", "bash")
	fakeProc(t, root, 200, 100, 200, 200, "claude", "claude")
	var r paneRoots
	check := func(what string, wantShell, wantKnown bool) {
		t.Helper()
		if shell, known := r.showsShell(root, "/sock", "w1:p1"); shell != wantShell || known != wantKnown {
			t.Errorf("%s: showsShell = %v, %v; want %v, %v", what, shell, known, wantShell, wantKnown)
		}
	}
	check("claude in the foreground", false, true)
	// Remembered: the pane's environments are not read again.
	for _, pid := range []string{"100", "200"} {
		if err := os.Remove(filepath.Join(root, pid, "environ")); err != nil {
			t.Fatal(err)
		}
	}
	check("from the remembered shell", false, true)
	// claude exits: the shell's group is the foreground again.
	if err := os.RemoveAll(filepath.Join(root, "200")); err != nil {
		t.Fatal(err)
	}
	fakeProc(t, root, 100, 1, 100, 100, "bash", "bash")
	check("the shell back in the foreground", true, true)
	// The pid now names another process (another start time) that is not
	// of the pane: the pane is looked for again, and not found.
	if err := os.RemoveAll(filepath.Join(root, "100")); err != nil {
		t.Fatal(err)
	}
	fakeProc(t, root, 100, 1, 100, 100, "bash", "bash")
	stat := filepath.Join(root, "100", "stat")
	raw, _ := os.ReadFile(stat)
	if err := os.WriteFile(stat, []byte(strings.Replace(string(raw), " 5100", " 9999", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "100", "environ"), []byte("HERDR_PANE_ID=w9:p9\x00HERDR_SOCKET_PATH=/sock\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("a reused pid", false, false)
}
