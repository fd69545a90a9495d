package projections

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// The collector's target is the process's: catch-ups that overlap share
// one raise, the last one out restores what was there before, a target
// already higher (or off) is kept, and GOGC in the environment wins.
func TestBulkGCIsRaisedOnceAndRestoredByTheLast(t *testing.T) {
	t.Setenv("GOGC", "") // the test's own environment must not decide
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	first := raiseGC(300)
	if got := gcPercent(); got != 300 {
		t.Fatalf("GC target %d during a catch-up, want 300", got)
	}
	second := raiseGC(300)
	first()
	first() // a second call is a no-op
	if got := gcPercent(); got != 300 {
		t.Fatalf("GC target %d while one catch-up still runs, want 300", got)
	}
	second()
	if got := gcPercent(); got != 100 {
		t.Fatalf("GC target %d after the last catch-up, want the 100 from before", got)
	}

	debug.SetGCPercent(500)
	raiseGC(300)()
	if got := gcPercent(); got != 500 {
		t.Errorf("GC target %d, want the higher 500 that was set kept", got)
	}
	debug.SetGCPercent(-1)
	r := raiseGC(300)
	if got := gcPercent(); got != -1 {
		t.Errorf("GC target %d during a catch-up with the collector off, want it left off", got)
	}
	r()

	debug.SetGCPercent(100)
	t.Setenv("GOGC", "150")
	r = raiseGC(300)
	if got := gcPercent(); got != 100 {
		t.Errorf("GC target %d with GOGC set, want it left alone", got)
	}
	r()
	if r := raiseGC(-1); gcPercent() != 100 {
		t.Error("BulkGC -1 changed the GC target")
	} else {
		r()
	}
}
