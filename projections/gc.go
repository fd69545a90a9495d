package projections

import (
	"os"
	"runtime/debug"
	"sync"
)

// bulkGCAfter is how long a catch-up must be (known from the log's end
// when it starts, else counted as it folds) for it to raise the
// collector's target. The raise lets the heap grow to four times what is
// live, and on a VM each page the process takes from the system costs
// (faulted and zeroed, ~8 µs a page on the 2-core VM measured): the
// first rebuild of 50,000 events in a process took about 27 µs of CPU
// an event at the default target against 32.5 with the target raised
// after 20,000, its 15,000 more page faults outweighing the collector's
// saving; past about 100,000 events that saving (4 µs an event on
// 300,000) pays for them.
const bulkGCAfter = 100_000

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
