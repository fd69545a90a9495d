package herdrbridge

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	return scanPanes(procRoot, socket, map[string]bool{pane: true})[pane]
}

// scanPanes lists the processes of every pane in panes, as paneProcs does
// for one, in one pass over procRoot: a host's boundary checks after a
// burst of herdr events (a hundred agents starting) read each process's
// environment once, not once per pane.
func scanPanes(procRoot, socket string, panes map[string]bool) map[string][]paneProc {
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	needle := []byte("HERDR_PANE_ID=")
	if len(panes) == 1 {
		for pane := range panes {
			needle = []byte("HERDR_PANE_ID=" + pane + "\x00")
		}
	}
	out := map[string][]paneProc{}
	buf := make([]byte, 16<<10)
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		dir := filepath.Join(procRoot, d.Name())
		var raw []byte
		raw, buf, err = readProcFile(filepath.Join(dir, "environ"), buf)
		if err != nil || !bytes.Contains(raw, needle) {
			continue
		}
		env := parseEnviron(raw)
		pane := env["HERDR_PANE_ID"]
		if !panes[pane] || env["HERDR_SOCKET_PATH"] != socket {
			continue
		}
		if st, ok := readStat(dir); ok {
			out[pane] = append(out[pane], paneProc{dir: dir, env: env, stat: st})
		}
	}
	return out
}

// readProcFile reads a whole /proc file into buf (grown as needed) with
// plain open, read and close: os.ReadFile's stat and the runtime poller's
// setup of every file cost more than the read itself, and a scan reads a
// file of every process on the machine. It returns the bytes read and the
// buffer to use next.
func readProcFile(path string, buf []byte) ([]byte, []byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, buf, err
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, buf, err
		}
		if m == 0 {
			return buf[:n], buf, nil
		}
		n += m
	}
}

// foregroundEnvs returns the environments of the pane's foreground
// processes, for the boundary check, or of all its processes when none is
// in the foreground; nil means "unknown", not "clean".
func foregroundEnvs(procs []paneProc) []map[string]string {
	var all, fg []map[string]string
	for _, p := range procs {
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
	// start is the process's start time (clock ticks after boot): with
	// the pid, it names one process, whatever pids are reused for later.
	start uint64
}

func readStat(dir string) (procStat, bool) {
	raw, _, err := readProcFile(filepath.Join(dir, "stat"), make([]byte, 512))
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
	if len(f) > 19 {
		s.start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return s, errs == [4]error{}
}

// paneRoot finds the pane's first process: the one whose parent is not
// of the pane. Whether it is a shell in the foreground says whether the
// agent that ran in the pane has exited (anything typed would run as a
// command); a pane whose first process is not an interactive shell (a
// program launched directly, a script) never counts as showing one.
func paneRoot(procRoot, socket, pane string) (paneProc, bool) {
	procs := paneProcs(procRoot, socket, pane)
	pids := map[int]bool{}
	for _, p := range procs {
		pids[p.stat.pid] = true
	}
	for _, p := range procs {
		if !pids[p.stat.ppid] {
			return p, true
		}
	}
	return paneProc{}, false
}

// showsShell reports whether p, a pane's first process, is an
// interactive shell in its terminal's foreground.
func (p paneProc) showsShell() bool {
	return shells[p.stat.comm] && interactive(p.dir) && p.foreground()
}

// paneRoots remembers each pane's first process, so a check before every
// turn reads two files of /proc — that process's stat and cmdline — and
// not the environment of every process on the machine (hundreds on a
// developer's machine: milliseconds on the turn's critical path).
type paneRoots struct {
	mu    sync.Mutex
	roots map[[2]string]procID // socket, pane → its first process
}

// procID names one process: pids are reused, start times are not.
type procID struct {
	pid   int
	start uint64
}

// showsShell reports whether the pane's foreground is the shell it
// started with; known is false when the pane's processes cannot be read
// here (then only the hooks and herdr can say). It looks at the
// remembered first process while that lives (its pid has the same start
// time), else scans /proc for the pane.
func (r *paneRoots) showsShell(procRoot, socket, pane string) (shell, known bool) {
	key := [2]string{socket, pane}
	r.mu.Lock()
	id, ok := r.roots[key]
	r.mu.Unlock()
	if ok {
		dir := filepath.Join(procRoot, strconv.Itoa(id.pid))
		if st, ok := readStat(dir); ok && st.start == id.start {
			return paneProc{dir: dir, stat: st}.showsShell(), true
		}
	}
	root, ok := paneRoot(procRoot, socket, pane)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok {
		delete(r.roots, key)
		return false, false
	}
	if r.roots == nil {
		r.roots = map[[2]string]procID{}
	}
	r.roots[key] = procID{root.stat.pid, root.stat.start}
	return root.showsShell(), true
}

// interactive reports whether the shell in dir reads commands from its
// terminal: started with options only (herdr starts a pane's shell so),
// not with -c or a script, which is a program of its own.
func interactive(dir string) bool {
	raw, _, err := readProcFile(filepath.Join(dir, "cmdline"), make([]byte, 512))
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
// showsShell says, known) means the command exited: it was seen
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
