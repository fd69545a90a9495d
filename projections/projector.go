package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
)

// Projector keeps fleetd's read models materialized: it follows the log,
// folds every event into the roster, sessions and turns, writes what
// changed to the KV buckets and checkpoints its position. It serves the
// folded state through Views. Views methods are safe for concurrent use
// while Run folds.
type Projector interface {
	Views
	// Run ensures the buckets, resumes from the checkpoint and follows the
	// log until ctx ends or Close is called. It writes a last checkpoint
	// before it returns. A nil error means it was stopped.
	Run(ctx context.Context) error
	// Ready is closed once the fold has caught up with the end of the log
	// as it was when Run (or Rebuild) started.
	Ready() <-chan struct{}
	// Rebuild drops the materialized views and the checkpoint and folds
	// the whole log again, returning once caught up with its end. It must
	// not run while Run does (ErrRunning).
	Rebuild(ctx context.Context) error
	// Subscribe delivers a Change for every roster row, session or turn a
	// folded event changed, for dashboards. A subscriber that falls more
	// than its buffer behind misses changes (Change.Seq lets it notice and
	// re-read). cancel ends the subscription and closes the channel.
	Subscribe() (changes <-chan Change, cancel func())
	// Close stops Run, waits for its last checkpoint and makes further Run
	// calls fail with ErrClosed. It is idempotent.
	Close()
}

// Change names one entry a folded event changed.
type Change struct {
	// Kind is "agent", "session" or "turn".
	Kind string `json:"kind"`
	// Key is the agent id, session name or turn id.
	Key string `json:"key"`
	// Seq is the stream sequence of the event that changed it.
	Seq uint64 `json:"seq"`
}

// The kinds of Change.
const (
	KindAgent   = "agent"
	KindSession = "session"
	KindTurn    = "turn"
)

var _ Projector = (*materializer)(nil)

// materializer is the Projector over JetStream KV.
type materializer struct {
	log    events.Log
	js     jetstream.JetStream
	o      Options
	optErr error

	// mu guards st for readers. Only the fold loop mutates st (under the
	// write lock); it reads st without locking.
	mu      sync.RWMutex
	st      *state
	cache   *turnCache
	applied atomic.Uint64
	kvb     atomic.Pointer[buckets]

	// Owned by the fold loop.
	loaded    bool
	dirty     dirtySet
	sinceCkpt int
	ckptSeq   uint64
	ckptAt    time.Time
	slot      int

	wmu         sync.Mutex
	turnWaiters map[string]*waiter
	seqCh       chan struct{}

	smu  sync.Mutex
	subs map[chan Change]struct{}

	readyMu sync.Mutex
	ready   chan struct{}

	life       sync.Mutex
	running    bool
	closed     bool
	runs       sync.WaitGroup
	stopCtx    context.Context
	stopCancel context.CancelFunc
}

type waiter struct {
	ch chan struct{}
	n  int
}

// New returns a Projector folding log into KV buckets of js. It does no
// I/O and starts nothing; Run does the work. Invalid options are reported
// by Run.
func New(log events.Log, js jetstream.JetStream, o Options) Projector {
	o.setDefaults()
	stopCtx, stopCancel := context.WithCancel(context.Background())
	return &materializer{
		log: log, js: js, o: o, optErr: o.Validate(),
		st:          newState(),
		cache:       newTurnCache(o.TurnCacheSize),
		dirty:       newDirtySet(),
		turnWaiters: map[string]*waiter{},
		subs:        map[chan Change]struct{}{},
		ready:       make(chan struct{}),
		stopCtx:     stopCtx, stopCancel: stopCancel,
	}
}

// start marks the fold loop taken, or says why it cannot be.
func (m *materializer) start() error {
	if m.optErr != nil {
		return m.optErr
	}
	m.life.Lock()
	defer m.life.Unlock()
	switch {
	case m.closed:
		return ErrClosed
	case m.running:
		return ErrRunning
	}
	m.running = true
	m.runs.Add(1)
	return nil
}

func (m *materializer) finish() {
	m.life.Lock()
	m.running = false
	m.life.Unlock()
	m.runs.Done()
}

func (m *materializer) Close() {
	m.life.Lock()
	m.closed = true
	m.life.Unlock()
	m.stopCancel()
	m.runs.Wait()
}

func (m *materializer) Ready() <-chan struct{} {
	m.readyMu.Lock()
	defer m.readyMu.Unlock()
	return m.ready
}

func (m *materializer) markReady() {
	m.readyMu.Lock()
	defer m.readyMu.Unlock()
	select {
	case <-m.ready:
	default:
		close(m.ready)
	}
}

func (m *materializer) Run(ctx context.Context) error {
	if err := m.start(); err != nil {
		return err
	}
	defer m.finish()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.stopCtx, cancel)()

	if err := m.open(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	err := m.loop(ctx)
	// The last checkpoint: the fold's context is over, so give the writes
	// their own short deadline.
	fctx, fcancel := context.WithTimeout(context.Background(), m.o.Timeout)
	defer fcancel()
	if ferr := m.flush(fctx, true); ferr != nil {
		err = errors.Join(err, ferr)
	}
	return err
}

// open ensures the buckets and, the first time, loads the checkpoint.
func (m *materializer) open(ctx context.Context) error {
	if m.kvBuckets() == nil {
		b, err := ensureBuckets(ctx, m.js, m.o)
		if err != nil {
			return err
		}
		m.kvb.Store(b)
	}
	if m.loaded {
		return nil
	}
	snap, err := m.loadCheckpoint(ctx)
	if err != nil {
		return err
	}
	if snap != nil {
		st := snap.state()
		m.mu.Lock()
		m.st = st
		m.mu.Unlock()
		m.ckptSeq = snap.Seq
		m.setApplied(snap.Seq)
	}
	m.ckptAt = time.Now()
	m.loaded = true
	return nil
}

// loop folds the log: catch up to its end, then follow it, retrying with
// backoff when the read breaks, until ctx ends.
func (m *materializer) loop(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := m.catchUp(ctx)
		if err == nil {
			m.markReady()
			err = m.follow(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		m.o.Logger.Warn("projections: reading the log failed; retrying", "applied", m.Applied(), "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

const batchSize = 512

// catchUp folds what the log holds now, past the applied position, and
// writes it all.
func (m *materializer) catchUp(ctx context.Context) error {
	batch := make([]events.Event, 0, batchSize)
	for ev, err := range m.log.Read(ctx, events.Query{FromSeq: m.Applied() + 1, Skips: true}) {
		if err != nil {
			return err
		}
		batch = append(batch, ev)
		if len(batch) == batchSize {
			if err := m.fold(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
			if err := m.maybeFlush(ctx); err != nil {
				return err
			}
		}
	}
	if err := m.fold(ctx, batch); err != nil {
		return err
	}
	return m.flush(ctx, true)
}

var errFollowEnded = errors.New("follower ended")

func (m *materializer) follow(ctx context.Context) error {
	f, err := m.log.Follow(ctx, events.Query{FromSeq: m.Applied() + 1, Buffer: 2 * batchSize, Skips: true})
	if err != nil {
		return err
	}
	defer f.Stop()
	flushT := time.NewTicker(m.o.FlushInterval)
	defer flushT.Stop()
	sweepT := time.NewTicker(m.o.SweepInterval)
	defer sweepT.Stop()
	batch := make([]events.Event, 0, batchSize)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-f.Events():
			if !ok {
				if err := f.Err(); err != nil {
					return err
				}
				return errFollowEnded
			}
			batch = append(batch[:0], ev)
		drain:
			for len(batch) < batchSize {
				select {
				case ev, ok := <-f.Events():
					if !ok {
						break drain
					}
					batch = append(batch, ev)
				default:
					break drain
				}
			}
			if err := m.fold(ctx, batch); err != nil {
				return err
			}
			if err := m.maybeFlush(ctx); err != nil {
				m.o.Logger.Warn("projections: writing views failed; will retry", "err", err)
			}
		case <-flushT.C:
			if err := m.flush(ctx, false); err != nil {
				m.o.Logger.Warn("projections: writing views failed; will retry", "err", err)
			}
		case <-sweepT.C:
			m.sweep()
		}
	}
}

// maybeFlush writes once enough has changed; the ticker covers the rest.
func (m *materializer) maybeFlush(ctx context.Context) error {
	if m.dirty.len() < batchSize && m.sinceCkpt < m.o.CheckpointEvery {
		return nil
	}
	return m.flush(ctx, false)
}

func (m *materializer) Rebuild(ctx context.Context) error {
	if err := m.start(); err != nil {
		return err
	}
	defer m.finish()
	m.kvb.Store(nil)
	if err := dropBuckets(ctx, m.js, m.o); err != nil {
		return err
	}
	m.mu.Lock()
	m.st = newState()
	m.cache.reset()
	m.mu.Unlock()
	m.dirty = newDirtySet()
	m.sinceCkpt, m.ckptSeq, m.slot = 0, 0, 0
	m.applied.Store(0)
	m.loaded = true
	if err := m.open(ctx); err != nil {
		return err
	}
	if err := m.catchUp(ctx); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	m.markReady()
	return nil
}

// setApplied advances the applied position and wakes WaitSeq callers.
func (m *materializer) setApplied(seq uint64) {
	m.applied.Store(seq)
	m.wmu.Lock()
	if m.seqCh != nil {
		close(m.seqCh)
		m.seqCh = nil
	}
	m.wmu.Unlock()
}

// notify wakes WaitTurn callers of the turns that changed and the
// subscribers of every change.
func (m *materializer) notify(changes []Change) {
	m.wmu.Lock()
	for _, c := range changes {
		if c.Kind != KindTurn {
			continue
		}
		if w, ok := m.turnWaiters[c.Key]; ok {
			close(w.ch)
			delete(m.turnWaiters, c.Key)
		}
	}
	m.wmu.Unlock()
	m.smu.Lock()
	defer m.smu.Unlock()
	for ch := range m.subs {
		for _, c := range changes {
			select {
			case ch <- c:
			default:
			}
		}
	}
}

func (m *materializer) kvBuckets() *buckets { return m.kvb.Load() }
