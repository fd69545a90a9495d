package dashboard

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
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
// recent folds (an LRU): moving around one moment costs one fold. Each
// fold replays the log from its start in memory (as much memory as the
// fleet then, and a core while it runs), so folds are bounded: at most
// cap(slots) run at once — a request for a new point waits up to wait
// for a slot and is then refused with ErrBusy — each within timeout.
type history struct {
	log     events.Log
	size    int
	turns   int
	timeout time.Duration
	wait    time.Duration
	slots   chan struct{} // one per fold running

	mu  sync.Mutex
	lru []*histEntry // most recently used first

	// folds counts the folds run (each a replay of the log), hits the
	// points answered by a fold already made or under way, refused those
	// turned away for want of a slot.
	folds, hits, refused atomic.Uint64
}

func newHistory(c Config) *history {
	return &history{log: c.Log, size: c.Snapshots, turns: c.SnapshotTurns, timeout: c.FoldTimeout, wait: c.FoldWait,
		slots: make(chan struct{}, c.MaxFolds)}
}

// pastHostTTL is how long a host may be silent before a fold of the past
// calls it stale: projections' default, set here because the cache
// relies on it (histEntry.serves).
const pastHostTTL = 15 * time.Second

// histEntry is one fold, done or under way: done closes when snap or err
// is set, so concurrent views of one point wait for one fold.
type histEntry struct {
	seq uint64
	at  time.Time // the fold's clock: host liveness is judged at it
	// latest is the latest event time the fold read; set with snap.
	latest time.Time
	done   chan struct{}
	snap   *snapshot
	err    error
}

// serves reports whether the entry's fold is the fleet as of seq judged
// at at. A fold depends on its clock only through host liveness: a host
// is stale once silent for longer than pastHostTTL, and none beat after
// the latest event read. So the same second gives the same fold, and so
// does any clock more than pastHostTTL past that event, where every
// silent host is stale alike: a quiet stretch of the log looked at from
// many points (a minute back, ten minutes back) costs one fold.
func (e *histEntry) serves(seq uint64, at time.Time) bool {
	if e.seq != seq {
		return false
	}
	if e.at.Unix() == at.Unix() {
		return true
	}
	select {
	case <-e.done:
	default:
		return false // latest is not known yet
	}
	return e.err == nil && e.at.Sub(e.latest) > pastHostTTL && at.Sub(e.latest) > pastHostTTL
}

// find is the entry that serves (seq, at), made the most recently used.
// The caller holds mu.
func (h *history) find(seq uint64, at time.Time) *histEntry {
	for i, e := range h.lru {
		if e.serves(seq, at) {
			h.lru = slices.Insert(slices.Delete(h.lru, i, i+1), 0, e)
			return e
		}
	}
	return nil
}

// at returns the fleet as of p.
func (h *history) at(ctx context.Context, p Point, now time.Time) (*snapshot, error) {
	seq, at, first, err := h.resolve(ctx, p, now)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	e := h.find(seq, at)
	h.mu.Unlock()
	if e == nil {
		// The slot is taken outside mu (a request waiting for one holds
		// up no other), so the same point may have started meanwhile.
		if err := h.acquire(ctx); err != nil {
			return nil, err
		}
		h.mu.Lock()
		if e = h.find(seq, at); e != nil {
			h.mu.Unlock()
			<-h.slots
		} else {
			e = &histEntry{seq: seq, at: at, done: make(chan struct{})}
			h.lru = slices.Insert(h.lru, 0, e)
			if len(h.lru) > h.size {
				h.lru = h.lru[:h.size]
			}
			h.mu.Unlock()
			if seq > 0 {
				h.folds.Add(1) // a replay; before the log there is none
			}
			h.run(ctx, e, first)
			<-h.slots
			return e.result(at)
		}
	}
	h.hits.Add(1)
	select {
	case <-e.done:
		return e.result(at)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// result is the entry's fold shown as of at.
func (e *histEntry) result(at time.Time) (*snapshot, error) {
	if e.err != nil {
		return nil, e.err
	}
	snap := *e.snap
	snap.at = at // ages are measured from the point asked for
	return &snap, nil
}

// acquire takes a fold's slot, waiting up to h.wait for one.
func (h *history) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-t.C:
		h.refused.Add(1)
		return fmt.Errorf("%w: %d running, the most this fleetd runs at once (each replays the log); try again in a moment, or look at a point already shown", ErrBusy, cap(h.slots))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run folds e's point and closes e.done. The fold outlives the request
// that asked for it (others may wait for it), within its own bound. A
// failed fold leaves the cache.
func (h *history) run(ctx context.Context, e *histEntry, first uint64) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	e.snap, e.latest, e.err = h.fold(fctx, e.seq, e.at, first)
	cancel()
	if e.err != nil && fctx.Err() != nil {
		e.err = fmt.Errorf("%w: folding the log up to #%d took longer than %v: %w", ErrFoldTimeout, e.seq, h.timeout, e.err)
	}
	close(e.done)
	if e.err != nil {
		h.mu.Lock()
		if i := slices.Index(h.lru, e); i >= 0 {
			h.lru = slices.Delete(h.lru, i, i+1)
		}
		h.mu.Unlock()
	}
}

// resolve turns p into the last sequence to fold, the time the view is
// as of (a time's last sequence stored by then; a sequence's own event's
// time) and the log's first sequence.
func (h *history) resolve(ctx context.Context, p Point, now time.Time) (uint64, time.Time, uint64, error) {
	st, err := h.log.State(ctx)
	if err != nil {
		return 0, time.Time{}, 0, err
	}
	if p.Seq == 0 {
		at := p.Time
		if at.After(now) {
			at = now
		}
		seq, err := h.log.SeqAt(ctx, at)
		if err != nil {
			return 0, time.Time{}, 0, err
		}
		if st.FirstSeq > 1 && seq < st.FirstSeq {
			// Before what is left of a trimmed log the fleet was not
			// empty: its history is gone.
			return 0, time.Time{}, 0, fmt.Errorf("%w: %s: the log was trimmed and begins at #%d; pick a point from then on", ErrBadPoint, p, st.FirstSeq)
		}
		return seq, at, st.FirstSeq, nil
	}
	if p.Seq < st.FirstSeq {
		return 0, time.Time{}, 0, fmt.Errorf("%w: %s: the log was trimmed and begins at #%d; pick a point from then on", ErrBadPoint, p, st.FirstSeq)
	}
	seq := min(p.Seq, st.LastSeq)
	if seq == 0 {
		return 0, now, st.FirstSeq, nil // an empty log
	}
	at := now
	for ev, err := range h.log.Read(ctx, events.Query{FromSeq: seq, ToSeq: seq}) {
		if err != nil {
			return 0, time.Time{}, 0, err
		}
		at = ev.Time
	}
	return seq, at, st.FirstSeq, nil
}

// fold runs the projections' fold in memory up to seq, and says the
// latest event time it read.
func (h *history) fold(ctx context.Context, seq uint64, at time.Time, first uint64) (*snapshot, time.Time, error) {
	log := &timedLog{Log: h.log}
	p := projections.New(log, nil, projections.Options{
		Memory: true, UpTo: seq, TurnCacheSize: h.turns, HostTTL: pastHostTTL, Now: func() time.Time { return at },
	})
	// Nothing was stored by then: the empty fleet (UpTo 0 would mean the
	// whole log).
	if seq > 0 {
		if err := p.Rebuild(ctx); err != nil {
			return nil, time.Time{}, fmt.Errorf("fold the log up to #%d: %w", seq, err)
		}
	}
	return &snapshot{at: at, seq: seq, first: first, views: p}, log.latest(), nil
}

// timedLog is a log that notes the latest event time read through it.
type timedLog struct {
	events.Log
	mu  sync.Mutex
	max time.Time
}

func (l *timedLog) Read(ctx context.Context, q events.Query) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		var max time.Time
		defer func() {
			l.mu.Lock()
			if max.After(l.max) {
				l.max = max
			}
			l.mu.Unlock()
		}()
		for ev, err := range l.Log.Read(ctx, q) {
			if ev.Time.After(max) {
				max = ev.Time
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (l *timedLog) latest() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}
