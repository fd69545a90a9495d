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
		"stat":    fmt.Sprintf("%d (%s) S %d %d %d 34816 %d 4194560", pid, comm, ppid, pgrp, pgrp, tpgid),
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
			shell, known := paneShowsShell(root, "/sock", "w1:p1")
			if shell != tt.shell || known != tt.known {
				t.Errorf("paneShowsShell = %v, %v; want %v, %v", shell, known, tt.shell, tt.known)
			}
		})
	}
}
