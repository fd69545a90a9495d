package projections

import (
	"os"
	"runtime/debug"
	"sync"
)

// bulkGCAfter is how many events a catch-up folds before it raises the
// collector's target: a catch-up after a reconnect folds a few, and
// changing the process's GC for those would only move its memory about.
const bulkGCAfter = 20_000

// bulkGC holds the collector's target raised while any catch-up in the
// process folds a long stretch (Options.BulkGC). The target is the
// process's, so catch-ups count themselves in and out, and the last one
// out puts back what was there before the first came in.
var bulkGC struct {
	mu     sync.Mutex
	n      int
	before int
}

// raiseGC raises the collector's target to percent (never lowers it)
// until the returned func is called. It does nothing when percent is -1
// or GOGC is set in the environment.
func raiseGC(percent int) (restore func()) {
	if percent < 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	bulkGC.mu.Lock()
	defer bulkGC.mu.Unlock()
	if bulkGC.n == 0 {
		bulkGC.before = debug.SetGCPercent(percent)
		if bulkGC.before < 0 || bulkGC.before > percent {
			debug.SetGCPercent(bulkGC.before) // off, or higher already: keep it
		}
	}
	bulkGC.n++
	return sync.OnceFunc(func() {
		bulkGC.mu.Lock()
		defer bulkGC.mu.Unlock()
		if bulkGC.n--; bulkGC.n == 0 {
			debug.SetGCPercent(bulkGC.before)
		}
	})
}
