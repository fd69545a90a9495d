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

// fakeDetached writes the /proc entry of a Stop hook's detached finisher
// in pane w1:p1: the pane's environment, init for a parent, a session of
// its own and no controlling terminal.
func fakeDetached(t *testing.T, root string, pid int) {
	t.Helper()
	fakeProc(t, root, pid, 1, pid, -1, "fleetd", "fleetd", "hook", "stop", "--finish", "/tmp/f.json")
	stat := fmt.Sprintf("%d (fleetd) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d", pid, pid, pid, 5000+pid)
	if err := os.WriteFile(filepath.Join(root, fmt.Sprint(pid), "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
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
		// A Stop hook's finisher outlives its hook, in a session of its
		// own with no terminal and init for a parent: whether its pid
		// comes before the shell's or after, the shell is the pane's.
		{"the agent exited, a detached finisher before the shell", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 100, "bash", "bash")
			fakeDetached(t, r, 10)
		}, true, true},
		{"the agent exited, a detached finisher after the shell", func(t *testing.T, r string) {
			fakeProc(t, r, 100, 1, 100, 100, "bash", "bash")
			fakeDetached(t, r, 300)
		}, true, true},
		{"only a detached finisher is left of the pane", func(t *testing.T, r string) {
			fakeDetached(t, r, 300)
		}, false, false},
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

// One pass over /proc finds the processes of every pane asked about, and
// only theirs: not another pane's, nor those of a pane of the same name
// under another herdr.
func TestScanPanesGroupsTheProcessesOfEachPane(t *testing.T) {
	root := t.TempDir()
	write := func(pid int, pane, socket string) {
		t.Helper()
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		env := "HERDR_PANE_ID=" + pane + "\x00HERDR_SOCKET_PATH=" + socket + "\x00FLEET_AGENT=a" + fmt.Sprint(pid) + "\x00"
		stat := fmt.Sprintf("%d (claude) S 1 %d %d 34816 %d 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d", pid, pid, pid, pid, 5000+pid)
		for name, body := range map[string]string{"environ": env, "stat": stat} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(100, "w1:p1", "/sock")
	write(101, "w1:p1", "/sock")
	write(200, "w1:p2", "/sock")
	write(300, "w1:p3", "/sock")
	write(400, "w1:p1", "/other.sock")
	got := scanPanes(root, "/sock", map[string]bool{"w1:p1": true, "w1:p2": true})
	pids := func(pane string) []int {
		var out []int
		for _, p := range got[pane] {
			out = append(out, p.stat.PID)
		}
		return out
	}
	if p := pids("w1:p1"); len(p) != 2 || p[0]+p[1] != 201 {
		t.Errorf("w1:p1: pids %v, want 100 and 101", p)
	}
	if p := pids("w1:p2"); len(p) != 1 || p[0] != 200 {
		t.Errorf("w1:p2: pids %v, want 200", p)
	}
	if _, ok := got["w1:p3"]; ok {
		t.Error("a pane not asked about was listed")
	}
	if p := paneProcs(root, "/sock", "w1:p3"); len(p) != 1 || p[0].env["FLEET_AGENT"] != "a300" {
		t.Errorf("paneProcs(w1:p3) = %+v", p)
	}
}
