package herdrbridge

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetd/fleetd/internal/proc"
)

// paneProc is one process of a pane, as /proc shows it.
type paneProc struct {
	dir  string
	env  map[string]string
	stat proc.Stat
}

// foreground reports whether the process is in its terminal's foreground
// process group.
func (p paneProc) foreground() bool { return p.stat.PGRP == p.stat.TPGID }

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
		raw, buf, err = proc.ReadFile(filepath.Join(dir, "environ"), buf)
		if err != nil || !bytes.Contains(raw, needle) {
			continue
		}
		env := parseEnviron(raw)
		pane := env["HERDR_PANE_ID"]
		if !panes[pane] || env["HERDR_SOCKET_PATH"] != socket {
			continue
		}
		if st, ok := proc.ReadStat(dir); ok {
			out[pane] = append(out[pane], paneProc{dir: dir, env: env, stat: st})
		}
	}
	return out
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

// paneRoot finds the pane's first process: the one on the pane's
// terminal whose parent is not of the pane. A process that carries the
// pane's environment but left its terminal — a Stop hook's detached
// finisher (claudehook.DetachFinisher: its own session, its parent gone)
// — is not it, though its parent is not of the pane either. Whether the
// first process is a shell in the foreground says whether the agent that
// ran in the pane has exited (anything typed would run as a command); a
// pane whose first process is not an interactive shell (a program
// launched directly, a script) never counts as showing one.
func paneRoot(procRoot, socket, pane string) (paneProc, bool) {
	procs := paneProcs(procRoot, socket, pane)
	pids := map[int]bool{}
	for _, p := range procs {
		pids[p.stat.PID] = true
	}
	for _, p := range procs {
		if !pids[p.stat.PPID] && p.stat.TTY != 0 {
			return p, true
		}
	}
	return paneProc{}, false
}

// showsShell reports whether p, a pane's first process, is an
// interactive shell in its terminal's foreground.
func (p paneProc) showsShell() bool {
	return shells[p.stat.Comm] && interactive(p.dir) && p.foreground()
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
		if st, ok := proc.ReadStat(dir); ok && st.Start == id.start {
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
	r.roots[key] = procID{root.stat.PID, root.stat.Start}
	return root.showsShell(), true
}

// interactive reports whether the shell in dir reads commands from its
// terminal: started with options only (herdr starts a pane's shell so),
// not with -c or a script, which is a program of its own.
func interactive(dir string) bool {
	raw, _, err := proc.ReadFile(filepath.Join(dir, "cmdline"), make([]byte, 512))
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
