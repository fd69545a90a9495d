package projections

import (
	"os"
	"runtime/debug"
	"sync"
)

// bulkGCAfter is how long a catch-up must be (known from the log's end
// when it starts, else counted as it folds) for it to raise the
// collector's target. The raise lets the heap grow to four times what is
// live: the pages it takes from the system cost (faulted and zeroed), and
// the collector's saving must pay for them. It does from about 10,000
// events on (2-core VM, the embedded server in the same heap, whose
// stores the collector scans too): a rebuild of 50,000 events ran about
// eleven collections at the default target, ~100 ms of the ~600 ms CPU it
// took, and with the raise used 500 ms, 0.45× → 0.52× of a raw read with
// SyncAlways (`fleetd bench --stages rebuild`, three runs each way); a
// first start on the same log went from 440 to 400 ms. The threshold
// once stood at 100,000, when a fold cost twice as much CPU an event and
// the faults weighed more beside the saving.
const bulkGCAfter = 10_000

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
