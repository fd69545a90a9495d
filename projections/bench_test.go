package projections_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/fleetd/fleetd/bench"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

var benchEvents = flag.Int("projections.events", 10_000, "events in BenchmarkRebuild's log")

// BenchmarkRebuild compares folding a log from an empty store (Rebuild:
// read, decode, fold, write every entry to KV, checkpoint) with reading
// the same stream raw through an ordered consumer, and with decoding it
// (events.Log.Read). Set the log's size with -projections.events.
func BenchmarkRebuild(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 1, Events: *benchEvents})
	if _, err := projectionstest.Play(ctx, e.log, e.js, w.Ops); err != nil {
		b.Fatal(err)
	}
	info, err := e.js.Stream(ctx, events.Stream)
	if err != nil {
		b.Fatal(err)
	}
	msgs := info.CachedInfo().State.Msgs
	// perSec reports the rate, and the process's CPU time per event
	// (this code's and the embedded server's, both cores): on a machine
	// with other work the wall time wanders, the CPU spent much less.
	var cpu0 time.Duration
	perSec := func(b *testing.B, n uint64) {
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(bench.ProcessCPU()-cpu0)/float64(n)/float64(b.N), "cpu-ns/event")
	}
	start := func() { cpu0 = bench.ProcessCPU() }

	b.Run("fold", func(b *testing.B) {
		start()
		for b.Loop() {
			p := projections.New(e.log, e.js, projections.Options{Now: func() time.Time { return w.End }})
			if err := p.Rebuild(ctx); err != nil {
				b.Fatal(err)
			}
			if len(p.Roster()) == 0 {
				b.Fatal("empty roster")
			}
		}
		perSec(b, msgs)
	})
	b.Run("decode", func(b *testing.B) {
		start()
		for b.Loop() {
			n := 0
			for _, err := range e.log.Read(ctx, events.Query{}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n == 0 {
				b.Fatal("nothing read")
			}
		}
		perSec(b, msgs)
	})
	b.Run("raw", func(b *testing.B) {
		start()
		for b.Loop() {
			_, got, err := bench.RawRead(ctx, e.js)
			if err != nil {
				b.Fatal(err)
			}
			if uint64(got) != msgs {
				b.Fatalf("read %d of %d", got, msgs)
			}
		}
		perSec(b, msgs)
	})
}
