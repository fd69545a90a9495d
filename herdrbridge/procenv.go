package herdrbridge

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// paneEnvs returns the environments of the foreground processes of a pane
// of the herdr listening at socket, read from procRoot (/proc). herdr does
// not expose a pane's environment, but it gives every pane process
// HERDR_PANE_ID and HERDR_SOCKET_PATH, and /proc/<pid>/stat names the
// terminal's foreground process group. Processes fleetd cannot read
// (another user's, or another machine's) are simply not found: nil then
// means "unknown", not "clean". When no process of the pane is in the
// foreground group, all of the pane's processes are returned.
func paneEnvs(procRoot, socket, pane string) []map[string]string {
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	needle := []byte("HERDR_PANE_ID=" + pane + "\x00")
	var all, fg []map[string]string
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		dir := filepath.Join(procRoot, d.Name())
		raw, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(raw, needle) {
			continue
		}
		env := parseEnviron(raw)
		if env["HERDR_PANE_ID"] != pane || env["HERDR_SOCKET_PATH"] != socket {
			continue
		}
		all = append(all, env)
		if foreground(dir) {
			fg = append(fg, env)
		}
	}
	if len(fg) > 0 {
		return fg
	}
	return all
}

// parseEnviron splits a NUL-separated environment block.
func parseEnviron(raw []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range bytes.Split(raw, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// foreground reports whether the process in dir is in its terminal's
// foreground process group: stat's pgrp (field 5) equals tpgid (field 8).
func foreground(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(raw[i+1:])) // state ppid pgrp session tty_nr tpgid …
	if len(f) < 6 {
		return false
	}
	return f[2] == f[5]
}
