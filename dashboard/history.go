package dashboard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// source is what one rendering of a view reads: the live fold, or the
// fleet as of a point of the past.
type source struct {
	views projections.Views
	// seq is the last stream sequence the view may read (0: the log's
	// end, live).
	seq uint64
	// now is what ages are measured against: the clock, or the point.
	now   time.Time
	point Point
	// first is the log's first sequence when the past was folded: past
	// 1, the log was trimmed and older history is gone.
	first uint64
}

func (s source) live() bool { return s.point.Live() }

// readTo is how far the view reads the log: to (0: the end), or, for a
// point before anything was stored, nothing at all (ok false).
func (s source) readTo() (to uint64, ok bool) {
	if s.live() {
		return 0, true
	}
	return s.seq, s.seq > 0
}

// snapshot is the fleet as of a point: the projections' own fold, in
// memory, of the log up to seq, with host liveness judged at at.
type snapshot struct {
	at    time.Time
	seq   uint64
	first uint64
	views projections.Views
}

// history folds the log up to points of the past and keeps the most
// recent folds (an LRU): moving around one moment costs one fold.
type history struct {
	log     events.Log
	size    int
	turns   int
	timeout time.Duration

	mu  sync.Mutex
	lru []*histEntry // most recently used first
}

type histKey struct {
	seq uint64
	at  int64 // the point's second: liveness is judged to the second
}

// histEntry is one fold, done or under way: done closes when snap or err
// is set, so concurrent views of one point wait for one fold.
type histEntry struct {
	key  histKey
	done chan struct{}
	snap *snapshot
	err  error
}

// at returns the fleet as of p.
func (h *history) at(ctx context.Context, p Point, now time.Time) (*snapshot, error) {
	seq, at, err := h.resolve(ctx, p, now)
	if err != nil {
		return nil, err
	}
	key := histKey{seq: seq, at: at.Unix()}
	h.mu.Lock()
	for i, e := range h.lru {
		if e.key == key {
			h.lru = slices.Insert(slices.Delete(h.lru, i, i+1), 0, e)
			h.mu.Unlock()
			select {
			case <-e.done:
				return e.snap, e.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	e := &histEntry{key: key, done: make(chan struct{})}
	h.lru = slices.Insert(h.lru, 0, e)
	if len(h.lru) > h.size {
		h.lru = h.lru[:h.size]
	}
	h.mu.Unlock()

	// The fold outlives the request that asked for it (others may wait
	// for it), within its own bound.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	e.snap, e.err = h.fold(fctx, seq, at)
	cancel()
	close(e.done)
	if e.err != nil {
		h.mu.Lock()
		if i := slices.Index(h.lru, e); i >= 0 {
			h.lru = slices.Delete(h.lru, i, i+1)
		}
		h.mu.Unlock()
	}
	return e.snap, e.err
}

// resolve turns p into the last sequence to fold and the time the view
// is as of: a time's last sequence stored by then; a sequence's own
// event's time.
func (h *history) resolve(ctx context.Context, p Point, now time.Time) (uint64, time.Time, error) {
	if p.Seq == 0 {
		at := p.Time
		if at.After(now) {
			at = now
		}
		seq, err := h.log.SeqAt(ctx, at)
		if err != nil {
			return 0, time.Time{}, err
		}
		return seq, at, nil
	}
	last, err := h.log.LastSeq(ctx, events.SubjectAll)
	if err != nil {
		return 0, time.Time{}, err
	}
	seq := min(p.Seq, last)
	at := now
	for ev, err := range h.log.Read(ctx, events.Query{FromSeq: seq, ToSeq: seq}) {
		if err != nil {
			return 0, time.Time{}, err
		}
		at = ev.Time
	}
	return seq, at, nil
}

// fold runs the projections' fold in memory up to seq.
func (h *history) fold(ctx context.Context, seq uint64, at time.Time) (*snapshot, error) {
	st, err := h.log.State(ctx)
	if err != nil {
		return nil, err
	}
	p := projections.New(h.log, nil, projections.Options{
		Memory: true, UpTo: seq, TurnCacheSize: h.turns, Now: func() time.Time { return at },
	})
	// Nothing was stored by then: the empty fleet (UpTo 0 would mean the
	// whole log).
	if seq > 0 {
		if err := p.Rebuild(ctx); err != nil {
			return nil, fmt.Errorf("fold the log up to #%d: %w", seq, err)
		}
	}
	return &snapshot{at: at, seq: seq, first: st.FirstSeq, views: p}, nil
}
