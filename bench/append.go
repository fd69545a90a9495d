package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
)

// BatchSize is the batch of the batched append rows.
const BatchSize = 100

// status is the event the append workloads write: a herdr status change
// of one of 100 agents, the fleet's most frequent event.
func status(i int) events.Event {
	st := events.StatusWorking
	if i%2 == 1 {
		st = events.StatusIdle
	}
	return events.Event{Subject: "a-" + strconv.Itoa(i%100), Data: events.AgentStatusChanged{
		Status: st, Source: "herdr", Pane: "p" + strconv.Itoa(i%100), StateChangeSeq: uint64(i)}}
}

// rawMsg is status(i) as the bytes events.Log would publish, built once:
// the raw rows publish the same payload with a fresh Nats-Msg-Id, so they
// pay JetStream's dedupe as the log does, and nothing else.
type rawMsg struct {
	subject string
	body    []byte
	prefix  string
}

func newRawMsg(agent string) rawMsg {
	ev := status(1)
	ev.Subject = agent
	ev.ID, ev.Source, ev.Time = events.NewULIDSource(time.Now)(), "fleetd/bench/raw", time.Now()
	subj, _ := ev.StreamSubject()
	body, _ := json.Marshal(ev)
	return rawMsg{subject: subj, body: body, prefix: events.NewULIDSource(time.Now)()}
}

func (r rawMsg) msg(i int) *nats.Msg {
	m := nats.NewMsg(r.subject)
	m.Data = r.body
	m.Header.Set(jetstream.MsgIDHeader, r.prefix+strconv.Itoa(i))
	return m
}

// LogAppend benchmarks events.Log.Append: one event per op, each waiting
// for its ack (what the shim, the bridge and the hooks do).
func LogAppend(log events.Log) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		i := 0
		for b.Loop() {
			i++
			if _, err := log.Append(ctx, status(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// RawPublish benchmarks js.PublishMsg of the same bytes with a fresh
// Nats-Msg-Id, one per op, each waiting for its ack: the floor under
// LogAppend.
func RawPublish(js jetstream.JetStream) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		r := newRawMsg("a-1")
		i := 0
		for b.Loop() {
			i++
			if _, err := js.PublishMsg(ctx, r.msg(i), jetstream.WithExpectStream(events.Stream)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// LogAppendBatch benchmarks events.Log.AppendBatch: one op is one atomic
// batch of BatchSize events.
func LogAppendBatch(log events.Log) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		batch := make([]events.Event, BatchSize)
		i := 0
		for b.Loop() {
			for k := range batch {
				i++
				batch[k] = status(i)
			}
			if _, err := log.AppendBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// RawPublishAsync benchmarks BatchSize js.PublishMsgAsync calls and the
// wait for all their acks per op: the floor under LogAppendBatch.
func RawPublishAsync(js jetstream.JetStream) func(*testing.B) {
	return func(b *testing.B) {
		r := newRawMsg("a-1")
		i := 0
		for b.Loop() {
			for range BatchSize {
				i++
				if _, err := js.PublishMsgAsync(r.msg(i)); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(30 * time.Second):
				b.Fatal("async publishes not acknowledged in 30s")
			}
		}
	}
}

// PerSecond converts a benchmark result whose op carries perOp events to
// events per second.
func PerSecond(r testing.BenchmarkResult, perOp int) float64 {
	if r.NsPerOp() == 0 {
		return 0
	}
	return float64(perOp) * 1e9 / (float64(r.T.Nanoseconds()) / float64(r.N))
}

// RawAtomicBatch benchmarks what AppendBatch asks of JetStream, without
// fleetd: BatchSize pre-encoded events as one atomic batch (Nats-Batch-*
// headers, a commit request on the last). It shows how much of the batched
// row is the server's atomic-batch staging rather than the log's code.
func RawAtomicBatch(js jetstream.JetStream) func(*testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		r := newRawMsg("a-1")
		nc := js.Conn()
		i, batch := 0, 0
		for b.Loop() {
			batch++
			id := r.prefix + "b" + strconv.Itoa(batch)
			for k := range BatchSize {
				i++
				m := r.msg(i)
				m.Header.Set("Nats-Batch-Id", id)
				m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(k+1))
				if k < BatchSize-1 {
					if err := nc.PublishMsg(m); err != nil {
						b.Fatal(err)
					}
					continue
				}
				m.Header.Set("Nats-Batch-Commit", "1")
				resp, err := nc.RequestMsgWithContext(ctx, m)
				if err != nil {
					b.Fatal(err)
				}
				var ack struct {
					Error *jetstream.APIError `json:"error"`
				}
				if err := json.Unmarshal(resp.Data, &ack); err != nil || ack.Error != nil {
					b.Fatalf("atomic batch: %v %v", err, ack.Error)
				}
			}
		}
	}
}
