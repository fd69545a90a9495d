package bench

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

// Memory is a process's memory at one point.
type Memory struct {
	// HeapMB is the Go heap in use after a forced GC.
	HeapMB float64 `json:"heap_mb"`
	// NATSMB and OwnMB split the heap: allocated under the embedded
	// nats-server (its caches, dedupe window, indexes) and everything else
	// (fleetd's own state), as HeapSplit estimates them.
	NATSMB float64 `json:"nats_mb"`
	OwnMB  float64 `json:"own_mb"`
	// RSSMB is the resident set (VmRSS), as the OS counts it.
	RSSMB float64 `json:"rss_mb"`
}

// MemoryNow collects garbage and reads this process's heap and RSS.
func MemoryNow() Memory {
	nats, own := HeapSplit(NATSServerPackage)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{HeapMB: float64(ms.HeapInuse) / (1 << 20), NATSMB: nats, OwnMB: own, RSSMB: RSS(os.Getpid())}
}

// NATSServerPackage is the embedded server's package path prefix.
const NATSServerPackage = "github.com/nats-io/nats-server/"

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

// HeapSplit splits the live Go heap between allocations made under code
// whose package path starts with prefix (e.g. the embedded nats-server)
// and the rest, in MB. It reads the runtime's sampled memory profile as of
// a fresh GC and scales each record as pprof does, so the two parts are
// estimates whose sum is close to the heap in use.
func HeapSplit(prefix string) (under, rest float64) {
	runtime.GC()
	runtime.GC() // the profile publishes the cycle before the last
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	for _, r := range recs {
		bytes, objs := float64(r.InUseBytes()), float64(r.InUseObjects())
		if objs == 0 {
			continue
		}
		if rate > 1 {
			bytes *= 1 / (1 - math.Exp(-bytes/objs/rate))
		}
		if stackUnder(r.Stack(), prefix) {
			under += bytes
		} else {
			rest += bytes
		}
	}
	return under / (1 << 20), rest / (1 << 20)
}

func stackUnder(pcs []uintptr, prefix string) bool {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, prefix) {
			return true
		}
		if !more {
			return false
		}
	}
}
