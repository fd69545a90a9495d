package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/fleetd/fleetd/lifecycle"
)

// Atomic batch publishing (nats-server 2.12+): the messages of a batch
// carry its id and their place in it, the last one commits, and the
// server stores all or none. A server that syncs every write (SyncAlways)
// syncs a committed batch once, not once per message — a rebuild or a
// catch-up writing tens of thousands of view entries is then bounded by
// encoding, not by fsync.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	// maxBatch is the server's default limit of messages in one atomic
	// batch (JetStream limits' max_batch_size).
	maxBatch = 1000
)

// minBatch is the fewest writes to one bucket worth a batch. On a server
// that syncs every write, each put is a sync on the disk the log's own
// appends wait on, and a batch is one; but nats-server stages a batch of
// a one-replica file stream in a file store of its own, ~2 ms a batch
// whatever its size, against ~0.3 ms a synced put (2-core VM; see
// events.Options.CoalesceMin): below eight, one by one is sooner. A
// replicated bucket stages a batch in memory and pays a consensus round
// per put: two are worth a batch there.
func (o Options) minBatch() int {
	if o.Replicas > 1 {
		return 2
	}
	return 8
}

// AllowBatchWrites turns on atomic batch publishing for a projection
// bucket's stream, unless it is on already, and reports whether it is on.
// A KV update (jetstream's UpdateKeyValue, CreateOrUpdateKeyValue) writes
// a stream config without it, so whoever provisions a bucket calls this
// after. An identity that may not edit streams gets an error; its writes
// then go one by one.
func AllowBatchWrites(ctx context.Context, js jetstream.JetStream, bucket string) (bool, error) {
	return batchWrites(ctx, js, bucket, true)
}

// batchWrites reports whether a bucket's stream takes atomic batches,
// turning them on first when allow says this identity may.
func batchWrites(ctx context.Context, js jetstream.JetStream, bucket string, allow bool) (bool, error) {
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return false, err
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowAtomicPublish || !allow {
		return cfg.AllowAtomicPublish, nil
	}
	cfg.AllowAtomicPublish = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return false, fmt.Errorf("allow atomic batches on %s: %w", bucket, err)
	}
	return true, nil
}

// batchReply is the server's answer to a batch's commit.
type batchReply struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Count  int    `json:"count"`
	Error  *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
}

// writeBatch publishes puts (all to one bucket, at most maxBatch) as one
// atomic batch and waits for its commit. An error means none was stored.
func writeBatch(ctx context.Context, nc *nats.Conn, puts []put) error {
	id := nuid.Next()
	for i, p := range puts {
		msg := putMsg(p)
		msg.Header.Set(hdrBatchID, id)
		msg.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if i < len(puts)-1 {
			if err := nc.PublishMsg(msg); err != nil {
				return err
			}
			continue
		}
		msg.Header.Set(hdrBatchCommit, "1")
		res, err := nc.RequestMsgWithContext(ctx, msg)
		if err != nil {
			return err
		}
		var r batchReply
		if err := json.Unmarshal(res.Data, &r); err != nil {
			return fmt.Errorf("batch commit: %w", err)
		}
		if r.Error != nil {
			return fmt.Errorf("batch commit: %s (%d)", r.Error.Description, r.Error.ErrCode)
		}
		if r.Count != len(puts) {
			return fmt.Errorf("batch commit stored %d of %d", r.Count, len(puts))
		}
	}
	return nil
}

// putMsg is the KV put of p: its subject, value and, for an ended turn,
// its TTL.
func putMsg(p put) *nats.Msg {
	msg := nats.NewMsg("$KV." + p.bucket + "." + Key(p.name))
	msg.Data = p.data
	if p.ttl > 0 {
		msg.Header.Set(jetstream.MsgTTLHeader, p.ttl.String())
	}
	return msg
}

// writeBatches writes the puts of every bucket that allows batches in
// atomic batches and returns the rest, with the puts of any batch that
// failed, for the one-by-one path (which retries and reports each). Each
// batch encodes its turns (from turns) as it goes; those that fail to
// encode come back in failed, with why.
func (m *materializer) writeBatches(ctx context.Context, puts []put, turns map[string]lifecycle.Turn) (rest, failed []put, errs []error) {
	b := m.kvBuckets()
	if !m.o.BatchWrites || b == nil || len(b.batched) == 0 || len(puts) < m.o.minBatch() {
		return puts, nil, nil
	}
	byBucket := map[string][]put{}
	for _, p := range puts {
		if b.batched[p.bucket] {
			byBucket[p.bucket] = append(byBucket[p.bucket], p)
		} else {
			rest = append(rest, p)
		}
	}
	// The batches go concurrently: each waits for its commit (a sync on
	// a SyncAlways server), and the server takes several batches of a
	// stream in flight at once.
	type job struct {
		bucket    string
		puts      []put
		failed    bool
		unencoded []put
		errs      []error
	}
	var jobs []*job
	for bucket, ps := range byBucket {
		if len(ps) < m.o.minBatch() {
			rest = append(rest, ps...)
			continue
		}
		for len(ps) > 0 {
			n := min(len(ps), maxBatch)
			jobs = append(jobs, &job{bucket: bucket, puts: ps[:n]})
			ps = ps[n:]
		}
	}
	nc := m.js.Conn()
	var wg sync.WaitGroup
	sem := make(chan struct{}, batchesInFlight)
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			j.puts, j.unencoded, j.errs = encodeTurns(j.puts, turns)
			if len(j.puts) == 0 {
				return
			}
			err := writeBatch(ctx, nc, j.puts)
			if err == nil {
				return
			}
			j.failed = true
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				m.o.Logger.Warn("projections: a batch of view writes failed; writing them one by one", "bucket", j.bucket, "writes", len(j.puts), "err", err)
			}
		})
	}
	wg.Wait()
	for _, j := range jobs {
		failed, errs = append(failed, j.unencoded...), append(errs, j.errs...)
		if j.failed {
			rest = append(rest, j.puts...)
		}
	}
	return rest, failed, errs
}

// batchesInFlight bounds the atomic batches a flush has in flight at once
// (the server's default limit per stream is 50).
const batchesInFlight = 4
