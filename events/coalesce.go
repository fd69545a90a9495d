package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// coalescer is group commit for Append (Options.CoalesceAppends). An
// append that finds none in flight is published at once, as without it;
// those that come in while one is in flight wait for it and then go
// together as one atomic batch, which a server that syncs every write
// to disk (SyncAlways) stores with one sync instead of one each — when
// there are enough of them to be worth a batch (minCoalesced). A burst
// of turns (a lead's fan-out) is a hundred queued and a hundred typed
// events from as many goroutines, each otherwise waiting its turn for
// the disk.
//
// A batch is all or nothing. When it is refused as a whole — a guard of
// one of its events failed, an event was stored before (a retry), the
// stream takes no atomic batches — its events are published one by one
// instead, in the order they came, so each caller gets the answer a lone
// Append would have given it.
type coalescer struct {
	l *jsLog
	// min is the fewest queued appends sent as a batch (Options.CoalesceMin).
	min int

	mu    sync.Mutex
	busy  bool // a publish (one event or a batch) is in flight
	queue []*pendingAppend
	// off: the stream refused atomic batches; appends go one by one.
	off atomic.Bool
}

// pendingAppend is an append waiting for the one in flight; its
// message carries its guard (appendOpts.guard).
type pendingAppend struct {
	msg  *nats.Msg
	seq  uint64
	dup  bool
	err  error
	done chan struct{}
}

func (c *coalescer) append(ctx context.Context, msg *nats.Msg) (uint64, bool, error) {
	c.mu.Lock()
	if !c.busy {
		c.busy = true
		c.mu.Unlock()
		seq, dup, err := c.l.publishOne(ctx, msg)
		c.next()
		return seq, dup, err
	}
	p := &pendingAppend{msg: msg, done: make(chan struct{})}
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	select {
	case <-p.done:
		return p.seq, p.dup, p.err
	case <-ctx.Done():
		// It may still be stored with its batch, as a publish whose ack
		// never came may be: a retry with the same id is a no-op.
		return 0, false, fmt.Errorf("append %s: %w", msg.Subject, ctx.Err())
	}
}

// next sends what queued while a publish was in flight, or ends the busy
// spell when nothing did.
func (c *coalescer) next() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.busy = false
		return
	}
	n := batchLen(c.queue)
	batch := c.queue[:n:n]
	c.queue = append([]*pendingAppend(nil), c.queue[n:]...)
	go c.flush(batch)
}

// batchLen is how many of the queued appends, from the first, go in one
// batch: at most MaxBatch, and none after which a guarded one would
// follow an event its guard covers. The server checks a guard against
// what was stored before the batch: an event before it in the same batch
// on the same agent would be stored in between unseen (with a wildcard
// guard, fleet.agent.X.>) or refuse the whole batch (its own subject).
// Such an event goes first in the next batch instead, where what came
// before it is stored.
func batchLen(queue []*pendingAppend) int {
	n := 0
	for n < len(queue) && n < MaxBatch {
		if h := queue[n].msg.Header; n > 0 && h.Get(jetstream.ExpectedLastSubjSeqHeader) != "" {
			filter := h.Get(jetstream.ExpectedLastSubjSeqSubjHeader)
			if filter == "" {
				filter = queue[n].msg.Subject
			}
			if slices.ContainsFunc(queue[:n], func(q *pendingAppend) bool { return subjectMatches(filter, q.msg.Subject) }) {
				break
			}
		}
		n++
	}
	return n
}

// subjectMatches reports whether subject (no wildcards) matches filter,
// with NATS's wildcards: * one token, > the rest.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

// flush publishes batch and answers its callers, then sends what queued
// meanwhile. Its callers' contexts do not bound it (each stops waiting on
// its own); the Log's Timeout does.
func (c *coalescer) flush(batch []*pendingAppend) {
	ctx, cancel := context.WithTimeout(context.Background(), c.l.o.Timeout)
	defer cancel()
	if len(batch) < c.min || c.off.Load() || !c.publishBatch(ctx, batch) {
		for _, p := range batch {
			p.seq, p.dup, p.err = c.l.publishOne(ctx, p.msg)
		}
	}
	for _, p := range batch {
		close(p.done)
	}
	c.next()
}

// minCoalesced is the fewest queued appends that go as one atomic batch
// by default (Options.CoalesceMin); fewer go one by one. nats-server
// stages an atomic batch of a one-replica file stream in a file store of
// its own, which costs ~2 ms a batch whatever its size, against ~0.3 ms
// for a lone synced publish (2-core VM): a batch of 10 stored 4.2k
// messages/s, of 100 27-32k, of 1,000 106-110k; one by one, synced,
// 3-3.7k. Below eight, one by one is sooner. (A replicated stream stages
// a batch in memory: the gateway sets 2 for one.)
const minCoalesced = 8

// publishBatch publishes batch as one atomic batch and reports whether it
// was stored. The messages sent are copies: the events' own messages stay
// as they were for a publish one by one.
func (c *coalescer) publishBatch(ctx context.Context, batch []*pendingAppend) bool {
	msgs := make([]*nats.Msg, len(batch))
	for i, p := range batch {
		msgs[i] = &nats.Msg{Subject: p.msg.Subject, Data: p.msg.Data, Header: maps.Clone(p.msg.Header)}
	}
	first, err := c.l.sendBatch(ctx, msgs)
	if err != nil {
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == errCodeAtomicPublishDisabled {
			c.off.Store(true)
		}
		return false
	}
	for j, q := range batch {
		q.seq = first + uint64(j)
	}
	return true
}

// errCodeAtomicPublishDisabled is nats-server's "atomic publish is
// disabled" (JSAtomicPublishDisabledErr): a FLEET stream made before
// AllowAtomicPublish, not yet updated.
const errCodeAtomicPublishDisabled jetstream.ErrorCode = 10174

// retryUntilDone has a publish try again, every 100ms, while no one
// answers: the tries end with ctx, which always has a deadline here.
var retryUntilDone = []jetstream.PublishOpt{jetstream.WithRetryAttempts(math.MaxInt32), jetstream.WithRetryWait(100 * time.Millisecond)}

// publishOne is one event's publish; its message carries its guard.
// While the stream has no leader to answer (an election after a node
// died, a stream being made) the publish is tried again until ctx ends:
// nats.go's own two tries in half a second fell short of an election on
// a busy machine, and failed appends a moment later would have stored.
func (l *jsLog) publishOne(ctx context.Context, msg *nats.Msg) (uint64, bool, error) {
	pa, err := l.js.PublishMsg(ctx, msg, retryUntilDone...)
	if err != nil {
		return 0, false, fmt.Errorf("append %s: %w", msg.Subject, translate(err))
	}
	return pa.Sequence, pa.Duplicate, nil
}
