package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/proc"
)

// writeStat writes a /proc/<pid>/stat under root with the given parent
// and CPU ticks (utime, stime, cutime, cstime), its name holding a space
// and a parenthesis as a process's name may.
func writeStat(t *testing.T, root string, pid, ppid int, ticks [4]int) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("%d (fleetd hook) x) S %d %d %d 0 -1 4194560 100 0 0 0 %d %d %d %d 20 0 1 0 100 0 0\n",
		pid, ppid, pid, pid, ticks[0], ticks[1], ticks[2], ticks[3])
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The CPU of a tree splits into its root's own, its descendants' own, and
// what they reaped; a process outside the tree is not counted, one that
// started meanwhile counts whole, and one that ended counts in its
// parent's reaped time.
func TestCPUTreeSplitsTheRootItsDescendantsAndWhatTheyReaped(t *testing.T) {
	root := t.TempDir()
	writeStat(t, root, 10, 1, [4]int{5, 5, 0, 0})                                    // herdr
	writeStat(t, root, 20, 10, [4]int{1, 1, 0, 0})                                   // a pane's shell
	writeStat(t, root, 30, 20, [4]int{2, 0, 0, 0})                                   // its agent
	writeStat(t, root, 40, 30, [4]int{3, 3, 0, 0})                                   // a hook, running
	writeStat(t, root, 99, 1, [4]int{50, 50, 0, 0})                                  // not under herdr
	if err := os.WriteFile(filepath.Join(root, "version"), nil, 0o644); err != nil { // not a pid
		t.Fatal(err)
	}
	before := readCPUTree(root, 10)
	if len(before.procs) != 4 {
		t.Fatalf("tree %v: want herdr and the three under it", before.procs)
	}
	// The hook ends and is reaped (its 6 ticks go to the agent's reaped
	// time, with 4 more it used meanwhile), another starts, herdr works.
	if err := os.RemoveAll(filepath.Join(root, "40")); err != nil {
		t.Fatal(err)
	}
	writeStat(t, root, 30, 20, [4]int{4, 0, 6, 4})
	writeStat(t, root, 41, 30, [4]int{1, 0, 0, 0})
	writeStat(t, root, 10, 1, [4]int{7, 5, 0, 0})
	writeStat(t, root, 99, 1, [4]int{90, 90, 0, 0})
	herdr, own, reaped := readCPUTree(root, 10).since(before)
	if herdr != 2*proc.ClockTick || own != 3*proc.ClockTick || reaped != 10*proc.ClockTick {
		t.Errorf("herdr %s, own %s, reaped %s; want 20ms, 30ms (the agent's 2 ticks, the new hook's 1), 100ms", herdr, own, reaped)
	}
}

// readProcCPU reads this process's own stat: it has used some CPU, and
// its parent is the one that started it.
func TestReadProcCPUReadsThisProcess(t *testing.T) {
	// Spin until the kernel has counted a tick of it (10 ms), for at most
	// 10 s of wall time on a machine busy with other work.
	var (
		cpu  procCPU
		ppid int
		ok   bool
	)
	for start := time.Now(); time.Since(start) < 10*time.Second; {
		if cpu, ppid, ok = readProcCPU("/proc", os.Getpid()); !ok || cpu.self > 0 {
			break
		}
	}
	if !ok || ppid != os.Getppid() || cpu.self <= 0 {
		t.Errorf("got %+v, parent %d, %v; want some CPU, parent %d", cpu, ppid, ok, os.Getppid())
	}
	if _, _, ok := readProcCPU(t.TempDir(), 1); ok {
		t.Error("a pid that is not there read as ok")
	}
}

// The fan-out's hook CPU is the sum of the runs the agents logged, each
// from its own rusage; a log that says fewer runs than turns is a skip,
// not a hook that costs nothing.
func TestTheFanOutsHookCPUIsTheSumOfItsRunsLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook-cpu.txt")
	if got := hookRuns(path); got != (hookCPU{}) {
		t.Fatalf("no file: %+v", got)
	}
	if err := os.WriteFile(path, []byte("UserPromptSubmit 1400\nStop 1600\njunk\nStop x\nStop 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := hookRuns(path)
	if got != (hookCPU{runs: 3, cpu: 4 * time.Millisecond}) {
		t.Fatalf("summed %+v, want 3 runs, 4ms", got)
	}
	var zero cpuSample
	rows := cpuRows(2, time.Second, zero, zero, 0, got)
	if r := rows[1]; r.Name != RowHooksCPU || r.P50 != 2 || r.Status != StatusOK {
		t.Errorf("hooks row %+v, want 2ms a turn, ok", r)
	}
	if r := cpuRows(4, time.Second, zero, zero, 0, got)[1]; r.Status != StatusSkip {
		t.Errorf("3 runs for 4 turns: %+v, want a skip", r)
	}
}
