package events_test

import (
	"context"
	"testing"

	"github.com/fleetd/fleetd/bench"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// benchLog is a fresh server (SyncAlways on when sync) with the stream and
// a log over it.
func benchLog(b *testing.B, sync bool) (*natstest.Server, events.Log) {
	b.Helper()
	var opts []natstest.Option
	if sync {
		opts = append(opts, natstest.WithSyncAlways())
	}
	return fleettest.StartLog(b, events.Options{Source: "fleetd/bench/events"}, opts...)
}

// BenchmarkAppend compares Log.Append with a raw js.PublishMsg of the same
// bytes (one event per op, each waiting for its ack), and Log.AppendBatch
// with raw async publishes and with a raw atomic batch (bench.BatchSize
// events per op), with SyncAlways off and on. `fleetd bench` runs the
// same bodies.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "sync=off"
		if sync {
			name = "sync=on"
		}
		b.Run(name, func(b *testing.B) {
			srv, log := benchLog(b, sync)
			perEvent := func(op bench.Op, n int) func(*testing.B) {
				return func(b *testing.B) {
					ctx := context.Background()
					i := 0
					for b.Loop() {
						i++
						if err := op(ctx, i); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
				}
			}
			b.Run("log", perEvent(bench.LogAppend(log), 1))
			b.Run("raw", perEvent(bench.RawPublish(srv.JS), 1))
			b.Run("log-batch", perEvent(bench.LogAppendBatch(log), bench.BatchSize))
			b.Run("raw-async", perEvent(bench.RawPublishAsync(srv.JS), bench.BatchSize))
			b.Run("raw-atomic-batch", perEvent(bench.RawAtomicBatch(srv.JS), bench.BatchSize))
		})
	}
}
