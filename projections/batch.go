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
	// defaultMaxBatch is nats-server's default limit of messages in one
	// atomic batch (JetStream limits' max_batch_size).
	defaultMaxBatch = 1000
	// errBatchTooLarge is the server's error code for a batch over its
	// max_batch_size.
	errBatchTooLarge = 10199
)

// maxBatch is the most writes one atomic batch takes (Options.MaxBatch).
func (o Options) maxBatch() int {
	if o.MaxBatch > 0 {
		return o.MaxBatch
	}
	return defaultMaxBatch
}

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

// batchError is a batch's commit the server refused, with its reason.
type batchError struct {
	code int // JetStream's err_code
	desc string
}

func (e *batchError) Error() string { return fmt.Sprintf("batch commit: %s (%d)", e.desc, e.code) }

// writeBatch publishes puts (all to one bucket, at most the server's
// max_batch_size) as one atomic batch and waits for its commit. An error
// means none was stored; a *batchError is the server's refusal.
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
			return &batchError{code: r.Error.ErrCode, desc: r.Error.Description}
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
		failed    []put // to write one by one
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
			n := min(len(ps), m.o.maxBatch())
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
			var refused *batchError
			if errors.As(err, &refused) && refused.code == errBatchTooLarge && len(j.puts) > defaultMaxBatch {
				// A server that keeps nats-server's default limit (one of
				// an older fleetd's, in a cluster) takes it in batches of
				// that size.
				j.failed, err = writeBatchesOf(ctx, nc, j.puts, defaultMaxBatch)
			} else if err != nil {
				j.failed = j.puts
			}
			if len(j.failed) > 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				m.o.Logger.Warn("projections: a batch of view writes failed; writing them one by one", "bucket", j.bucket, "writes", len(j.failed), "err", err)
			}
		})
	}
	wg.Wait()
	for _, j := range jobs {
		failed, errs = append(failed, j.unencoded...), append(errs, j.errs...)
		rest = append(rest, j.failed...)
	}
	return rest, failed, errs
}

// writeBatchesOf writes puts in atomic batches of n, one after another,
// and returns the puts of those that failed, with the last error.
func writeBatchesOf(ctx context.Context, nc *nats.Conn, puts []put, n int) (failed []put, err error) {
	for len(puts) > 0 {
		part := puts[:min(len(puts), n)]
		puts = puts[len(part):]
		if perr := writeBatch(ctx, nc, part); perr != nil {
			failed, err = append(failed, part...), perr
		}
	}
	return failed, err
}

// batchesInFlight bounds the atomic batches a flush has in flight at once
// (the server's default limit per stream is 50).
const batchesInFlight = 4
