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

// shells are the command names of the shells a pane starts with.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true, "mksh": true,
	"tcsh": true, "csh": true, "nu": true, "elvish": true, "xonsh": true, "pwsh": true, "ash": true, "busybox": true,
}

// procStat is what /proc/<pid>/stat and comm say of one process.
type procStat struct {
	pid, ppid, pgrp, tpgid int
	comm                   string
}

func readStat(dir string) (procStat, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procStat{}, false
	}
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(string(raw[end+1:])) // state ppid pgrp session tty_nr tpgid …
	if len(f) < 6 {
		return procStat{}, false
	}
	var s procStat
	var err1, err2, err3, err4 error
	s.pid, err1 = strconv.Atoi(strings.TrimSpace(string(raw[:open])))
	s.ppid, err2 = strconv.Atoi(f[1])
	s.pgrp, err3 = strconv.Atoi(f[2])
	s.tpgid, err4 = strconv.Atoi(f[5])
	s.comm = string(raw[open+1 : end])
	return s, err1 == nil && err2 == nil && err3 == nil && err4 == nil
}

// paneShowsShell reports whether the foreground of a pane (of the herdr
// at socket) is the shell the pane started with — the agent that ran in
// it has exited, and anything typed would run as a command. known is
// false when the pane's processes cannot be read here (another user's,
// another machine's, a sandbox's): then only the hooks and herdr can say.
// A pane whose first process is not a shell (a program launched directly)
// never counts as showing one.
func paneShowsShell(procRoot, socket, pane string) (shell, known bool) {
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return false, false
	}
	needle := []byte("HERDR_PANE_ID=" + pane + "\x00")
	procs := map[int]procStat{}
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
		if st, ok := readStat(dir); ok {
			procs[st.pid] = st
		}
	}
	for _, p := range procs {
		if _, child := procs[p.ppid]; child {
			continue
		}
		// p is the pane's first process.
		if !shells[p.comm] || !interactive(filepath.Join(procRoot, strconv.Itoa(p.pid))) {
			return false, true
		}
		return p.tpgid == p.pgrp, true
	}
	return false, false
}

// interactive reports whether the shell in dir reads commands from its
// terminal: started with options only (herdr starts a pane's shell so),
// not with -c or a script, which is a program of its own.
func interactive(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	for _, a := range args[1:] {
		if a == "-c" || !strings.HasPrefix(a, "-") {
			return false
		}
	}
	return true
}
