package herdrbridge

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// paneProc is one process of a pane, as /proc shows it.
type paneProc struct {
	dir  string
	env  map[string]string
	stat procStat
}

// foreground reports whether the process is in its terminal's foreground
// process group.
func (p paneProc) foreground() bool { return p.stat.pgrp == p.stat.tpgid }

// paneProcs lists the processes of a pane of the herdr listening at socket,
// read from procRoot (/proc). herdr does not expose a pane's processes,
// but it gives every pane process HERDR_PANE_ID and HERDR_SOCKET_PATH.
// Processes fleetd cannot read (another user's, another machine's, a
// sandbox's) are simply not found: none means "unknown".
func paneProcs(procRoot, socket, pane string) []paneProc {
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	needle := []byte("HERDR_PANE_ID=" + pane + "\x00")
	var out []paneProc
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
			out = append(out, paneProc{dir: dir, env: env, stat: st})
		}
	}
	return out
}

// paneEnvs returns the environments of the pane's foreground processes,
// for the boundary check, or of all its processes when none is in the
// foreground; nil means "unknown", not "clean".
func paneEnvs(procRoot, socket, pane string) []map[string]string {
	var all, fg []map[string]string
	for _, p := range paneProcs(procRoot, socket, pane) {
		all = append(all, p.env)
		if p.foreground() {
			fg = append(fg, p.env)
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

// shells are the command names of the shells a pane starts with.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true, "mksh": true,
	"tcsh": true, "csh": true, "nu": true, "elvish": true, "xonsh": true, "pwsh": true, "ash": true, "busybox": true,
}

// procStat is what /proc/<pid>/stat says of one process.
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
	var errs [4]error
	s.pid, errs[0] = strconv.Atoi(strings.TrimSpace(string(raw[:open])))
	s.ppid, errs[1] = strconv.Atoi(f[1])
	s.pgrp, errs[2] = strconv.Atoi(f[2])
	s.tpgid, errs[3] = strconv.Atoi(f[5])
	s.comm = string(raw[open+1 : end])
	return s, errs == [4]error{}
}

// paneShowsShell reports whether the foreground of a pane is the shell the
// pane started with — the agent that ran in it has exited, and anything
// typed would run as a command. known is false when the pane's processes
// cannot be read here: then only the hooks and herdr can say. A pane whose
// first process is not an interactive shell (a program launched directly,
// a script) never counts as showing one.
func paneShowsShell(procRoot, socket, pane string) (shell, known bool) {
	procs := paneProcs(procRoot, socket, pane)
	pids := map[int]bool{}
	for _, p := range procs {
		pids[p.stat.pid] = true
	}
	for _, p := range procs {
		if pids[p.stat.ppid] {
			continue
		}
		// p is the pane's first process.
		if !shells[p.stat.comm] || !interactive(p.dir) {
			return false, true
		}
		return p.foreground(), true
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

// LaunchGrace is how long after an agent's command was typed into its
// pane's shell the shell in the foreground means the command exited, when
// the command was never seen running: before that, the shell may only not
// have read the typed line yet (a pane's shell starting up, a loaded
// machine).
const LaunchGrace = 3 * time.Second

// launchWatch tells, from looks at a pane's foreground, an agent command
// that exited from one that has not started yet.
type launchWatch struct {
	began time.Time // when the command was typed
	seen  bool      // something other than the shell was in the foreground
}

// exited reports whether the shell being in the foreground (shell, as
// paneShowsShell says, known) means the command exited: it was seen
// running before, or LaunchGrace has passed since it was typed.
func (w *launchWatch) exited(shell, known bool, now time.Time) bool {
	switch {
	case !known:
		return false
	case !shell:
		w.seen = true
		return false
	}
	return w.seen || now.Sub(w.began) >= LaunchGrace
}
