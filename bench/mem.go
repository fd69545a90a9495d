package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Memory is a process's memory at one point.
type Memory struct {
	// HeapMB is the Go heap in use after a forced GC.
	HeapMB float64 `json:"heap_mb"`
	// RSSMB is the resident set (VmRSS), as the OS counts it.
	RSSMB float64 `json:"rss_mb"`
}

// MemoryNow collects garbage and reads this process's heap and RSS.
func MemoryNow() Memory {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{HeapMB: float64(ms.HeapInuse) / (1 << 20), RSSMB: RSS(os.Getpid())}
}

// RSS is the resident set of process pid in MB (VmRSS from /proc), or 0
// where /proc is not there.
func RSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// Time runs fn n times and returns each call's duration.
func Time(n int, fn func() error) (Sample, error) {
	s := make(Sample, 0, n)
	for range n {
		start := time.Now()
		if err := fn(); err != nil {
			return s, err
		}
		s = append(s, time.Since(start))
	}
	return s, nil
}
