package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fleetd/fleetd/internal/proc"
)

// procCPU is the CPU a process has used (user and system), and that of
// the children it has waited for: a child's time, its own children's
// with it, goes to its parent once the parent reaps it.
type procCPU struct {
	self, reaped time.Duration
}

// readProcCPU reads pid's CPU and its parent from procRoot (/proc).
func readProcCPU(procRoot string, pid int) (cpu procCPU, ppid int, ok bool) {
	st, ok := proc.ReadStat(filepath.Join(procRoot, strconv.Itoa(pid)))
	if !ok {
		return procCPU{}, 0, false
	}
	return procCPU{self: st.CPU(), reaped: st.Reaped()}, st.PPID, true
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
