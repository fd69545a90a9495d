package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
// same bodies. Each workload gets a server of its own: on a shared one,
// each paid for what the ones before it stored (a larger dedupe window
// and index), and a ratio measured their order.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "sync=off"
		if sync {
			name = "sync=on"
		}
		b.Run(name, func(b *testing.B) {
			perEvent := func(mk func(*natstest.Server, events.Log) bench.Op, n int) func(*testing.B) {
				return func(b *testing.B) {
					srv, log := benchLog(b, sync)
					op := mk(srv, log)
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
			onLog := func(f func(events.Log) bench.Op) func(*natstest.Server, events.Log) bench.Op {
				return func(_ *natstest.Server, l events.Log) bench.Op { return f(l) }
			}
			onJS := func(f func(jetstream.JetStream) bench.Op) func(*natstest.Server, events.Log) bench.Op {
				return func(s *natstest.Server, _ events.Log) bench.Op { return f(s.JS) }
			}
			b.Run("log", perEvent(onLog(bench.LogAppend), 1))
			b.Run("raw", perEvent(onJS(bench.RawPublish), 1))
			b.Run("log-batch", perEvent(onLog(bench.LogAppendBatch), bench.BatchSize))
			b.Run("log-many", perEvent(onLog(bench.LogAppendMany), bench.BatchSize))
			b.Run("raw-async", perEvent(onJS(bench.RawPublishAsync), bench.BatchSize))
			b.Run("raw-atomic-batch", perEvent(onJS(bench.RawAtomicBatch), bench.BatchSize))
		})
	}
}

// BenchmarkDecode is the registry's decode of the events a turn writes
// (queued, typed, submitted, replied, a status): what every reader,
// and a projection rebuild most of all, pays per event.
func BenchmarkDecode(b *testing.B) {
	turn := []events.Event{
		{Subject: "w1", Data: events.AgentQueued{From: "lead", Text: "write the tests for the router's cap"}},
		{Subject: "w1", Data: events.AgentTyped{Pane: "w1:p2", Method: "agent.prompt", Bytes: 36, Delivery: "paste"}},
		{Subject: "w1", Data: events.AgentSubmitted{PromptID: "958abe16-b493-490f-9656-a28c2986dd3e", Via: "hook"}},
		{Subject: "w1", Data: events.AgentReplied{Reply: "done: 14 tests, all pass", Model: "claude-sonnet", Tokens: events.Tokens{In: 1800, Out: 420}, CostUSD: 0.0117}},
		{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}},
	}
	reg := events.NewRegistry()
	type raw struct {
		subject string
		data    []byte
	}
	var msgs []raw
	for i := range turn {
		ev := turn[i]
		ev.ID = events.NewULIDSource(time.Now)()
		ev.Time = time.Now()
		ev.Source = "fleetd/h1/herdr"
		ev.CorrelationID = ev.ID
		subj, err := ev.StreamSubject()
		if err != nil {
			b.Fatal(err)
		}
		data, err := ev.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, raw{subj, data})
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			if _, err := reg.Decode(m.subject, m.data); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(msgs)*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkConcurrentAppend is many goroutines appending at once (a
// fan-out's handlers and delivery workers) on a server that syncs every
// write, one at a time or coalesced into batches (CoalesceAppends).
func BenchmarkConcurrentAppend(b *testing.B) {
	for _, coalesce := range []bool{false, true} {
		name := "coalesce=off"
		if coalesce {
			name = "coalesce=on"
		}
		b.Run(name, func(b *testing.B) {
			_, log := fleettest.StartLog(b, events.Options{Source: "fleetd/bench/events", CoalesceAppends: coalesce}, natstest.WithSyncAlways())
			b.SetParallelism(32)
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					i := int(n.Add(1))
					if err := bench.LogAppend(log)(ctx, i); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
