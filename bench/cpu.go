package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU a process has used (user and system), and that of
// the children it has waited for: a child's time, its own children's
// with it, goes to its parent once the parent reaps it.
type procCPU struct {
	self, reaped time.Duration
}

// readProcCPU reads pid's CPU and its parent from procRoot (/proc).
func readProcCPU(procRoot string, pid int) (cpu procCPU, ppid int, ok bool) {
	raw, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procCPU{}, 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from its closing parenthesis (state is field 3, ppid 4, utime 14,
	// stime 15, cutime 16, cstime 17).
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return procCPU{}, 0, false
	}
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 15 {
		return procCPU{}, 0, false
	}
	var n [5]int64
	for i, k := range []int{1, 11, 12, 13, 14} {
		if n[i], err = strconv.ParseInt(f[k], 10, 64); err != nil {
			return procCPU{}, 0, false
		}
	}
	return procCPU{self: time.Duration(n[1]+n[2]) * clockTick, reaped: time.Duration(n[3]+n[4]) * clockTick}, int(n[0]), true
}

// cpuTree is the CPU of a process and of every process under it, by pid.
type cpuTree struct {
	root  int
	procs map[int]procCPU
}

// readCPUTree reads root and its descendants from procRoot.
func readCPUTree(procRoot string, root int) cpuTree {
	t := cpuTree{root: root, procs: map[int]procCPU{}}
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return t
	}
	parent := map[int]int{}
	cpu := map[int]procCPU{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if c, ppid, ok := readProcCPU(procRoot, pid); ok {
			parent[pid], cpu[pid] = ppid, c
		}
	}
	under := func(pid int) bool {
		for seen := 0; pid > 1 && seen < 64; seen++ {
			if pid == root {
				return true
			}
			pid = parent[pid]
		}
		return false
	}
	for pid, c := range cpu {
		if under(pid) {
			t.procs[pid] = c
		}
	}
	return t
}

// since splits the CPU t's tree used after before: the root's own, and
// under it, its descendants' own and what they reaped (their finished
// children). A process new since before counts whole; one gone since
// counts in its parent's reaped time, if the parent waited for it.
func (t cpuTree) since(before cpuTree) (root, own, reaped time.Duration) {
	for pid, c := range t.procs {
		b := before.procs[pid]
		if pid == t.root {
			root = c.self - b.self
			own += c.reaped - b.reaped // a pane process that ended
			continue
		}
		own += c.self - b.self
		reaped += c.reaped - b.reaped
	}
	return root, own, reaped
}

// ProcessCPU is the CPU this process has used (user and system), every
// thread's: with a benchmark's wall time, what its work cost over both
// cores.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
