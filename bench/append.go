package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// Op is one operation of a workload; i counts the operations from 1. The
// same Ops run under `go test -bench` (OpBench in the test files) and in
// `fleetd bench` (Run), so both measure the same bodies; the package does
// not import "testing", so the fleetd binary does not link it.
type Op func(ctx context.Context, i int) error

// LogAppend is events.Log.Append: one event per op, each waiting for its
// ack (what the shim, the bridge and the hooks do).
func LogAppend(log events.Log) Op {
	return func(ctx context.Context, i int) error {
		_, err := log.Append(ctx, status(i))
		return err
	}
}

// RawPublish is js.PublishMsg of the same bytes with a fresh Nats-Msg-Id,
// one per op, each waiting for its ack: the floor under LogAppend.
func RawPublish(js jetstream.JetStream) Op {
	r := newRawMsg("a-1")
	return func(ctx context.Context, i int) error {
		_, err := js.PublishMsg(ctx, r.msg(i), jetstream.WithExpectStream(events.Stream))
		return err
	}
}

// LogAppendBatch is events.Log.AppendBatch: one op is one atomic batch of
// BatchSize events.
func LogAppendBatch(log events.Log) Op { return batchOp(log.AppendBatch) }

// LogAppendMany is events.Log.AppendMany: one op is BatchSize events
// published asynchronously, not atomically, each waiting for its ack.
func LogAppendMany(log events.Log) Op { return batchOp(log.AppendMany) }

// batchOp hands send the op's BatchSize status events: op i carries
// events (i-1)×BatchSize+1 to i×BatchSize.
func batchOp(send func(context.Context, []events.Event) ([]events.Ack, error)) Op {
	batch := make([]events.Event, BatchSize)
	return func(ctx context.Context, i int) error {
		for k := range batch {
			batch[k] = status((i-1)*BatchSize + k + 1)
		}
		_, err := send(ctx, batch)
		return err
	}
}

// RawPublishAsync is BatchSize js.PublishMsgAsync calls and the wait for
// all their acks per op: the floor under LogAppendBatch.
func RawPublishAsync(js jetstream.JetStream) Op {
	r := newRawMsg("a-1")
	return func(ctx context.Context, i int) error {
		for k := range BatchSize {
			if _, err := js.PublishMsgAsync(r.msg((i-1)*BatchSize + k + 1)); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("async publishes not acknowledged in 30s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RawAtomicBatch is what AppendBatch asks of JetStream, without fleetd:
// BatchSize pre-encoded events as one atomic batch (Nats-Batch-* headers,
// a commit request on the last). It shows how much of the batched row is
// the server's atomic-batch staging rather than the log's code.
func RawAtomicBatch(js jetstream.JetStream) Op {
	r := newRawMsg("a-1")
	nc := js.Conn()
	return func(ctx context.Context, i int) error {
		id := r.prefix + "b" + strconv.Itoa(i)
		for k := range BatchSize {
			m := r.msg((i-1)*BatchSize + k + 1)
			m.Header.Set("Nats-Batch-Id", id)
			m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(k+1))
			if k < BatchSize-1 {
				if err := nc.PublishMsg(m); err != nil {
					return err
				}
				continue
			}
			m.Header.Set("Nats-Batch-Commit", "1")
			resp, err := nc.RequestMsgWithContext(ctx, m)
			if err != nil {
				return err
			}
			var ack struct {
				Error *jetstream.APIError `json:"error"`
			}
			if err := json.Unmarshal(resp.Data, &ack); err != nil {
				return err
			}
			if ack.Error != nil {
				return fmt.Errorf("atomic batch: %w", ack.Error)
			}
		}
		return nil
	}
}

// Result is a timed run of an Op.
type Result struct {
	N       int
	Elapsed time.Duration
}

// PerSecond is the rate of events, an op carrying perOp of them.
func (r Result) PerSecond(perOp int) float64 {
	if r.N == 0 || r.Elapsed <= 0 {
		return 0
	}
	return float64(perOp*r.N) / r.Elapsed.Seconds()
}

// Run repeats op for about d (at least once, after one untimed warm-up
// op), as testing.Benchmark would with -benchtime d.
func Run(ctx context.Context, d time.Duration, op Op) (Result, error) {
	if err := op(ctx, 1); err != nil {
		return Result{}, err
	}
	start := time.Now()
	n := 0
	for n == 0 || time.Since(start) < d {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		n++
		if err := op(ctx, n+1); err != nil {
			return Result{}, err
		}
	}
	return Result{N: n, Elapsed: time.Since(start)}, nil
}
