package projections

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// Projector keeps fleetd's read models: it follows the log, folds every
// event into the roster, sessions and turns, writes what changed to the KV
// buckets and checkpoints its position (Options.Memory: it only folds). It
// serves the folded state through Views. Views methods are safe for
// concurrent use while Run folds.
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
	// not run while Run does (ErrRunning). With Options.Memory it drops
	// only what it holds in memory and writes nothing.
	Rebuild(ctx context.Context) error
	// Subscribe delivers a Change for every roster row, session or turn a
	// folded event changed, for dashboards. A subscriber that falls more
	// than its buffer behind misses changes (Change.Seq lets it notice and
	// re-read). cancel ends the subscription and closes the channel.
	Subscribe() (changes <-chan Change, cancel func())
	// Close stops Run, waits for its last checkpoint and makes further Run
	// calls fail with ErrClosed. It is idempotent.
	Close()
	// Horizon says what the fold still needs from the log, for
	// retention: nothing at or after the checkpoint, nothing of an open
	// turn, the latest state of every agent.
	Horizon() Horizon
}

// Horizon is what a projection needs the log to keep. Retention trims
// below min(Checkpoint+1, OpenFrom) only, and keeps the last state event
// of every agent that is not Gone.
type Horizon struct {
	// Stream is the incarnation (creation time) of the stream the
	// sequences below are positions in; zero before the fold started.
	Stream time.Time
	// Applied is the last sequence folded; Checkpoint the one the latest
	// checkpoint covers (0: none yet). A restart, and a rebuild of a
	// trimmed log, resume after the checkpoint.
	Applied, Checkpoint uint64
	// OpenFrom is the first sequence of the oldest open turn, 0 when no
	// turn is open. A turn restored from a checkpoint that predates
	// FirstSeq pins 1.
	OpenFrom uint64
	// Live are the registered agents that have not exited; Gone the ones
	// that exited.
	Live, Gone []string
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
	// KindRole names a role in Views.Usage; no Change has it.
	KindRole = "role"
)

var _ Projector = (*materializer)(nil)

// materializer is the Projector: the fold, the Views over it and, unless
// Options.Memory, its writes to JetStream KV.
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
	probed    bool // Memory: the readable buckets were looked for
	dirty     dirtySet
	changeBuf []Change // a fold's changes, reused (see fold)
	sinceCkpt int
	ckptSeq   uint64
	ckptAt    time.Time
	slot      int
	// ckptStale forces the next checkpoint (the fold re-anchored on a new
	// stream, so the old one names positions in another stream).
	ckptStale bool
	// stream is the incarnation the fold follows (StreamState.Created).
	stream  time.Time
	trimmed uint64 // the first sequence of a gap already reported
	// logEnd is the log's last sequence when the fold last looked (a
	// rebuild, anchor): how long the next catch-up is, about.
	logEnd uint64
	wfail  writeTrouble
	// evicted, while a fold from nothing reads the whole stream (a
	// rebuild into emptied buckets, a first start), holds the turns
	// pushed out of the cache: the only ones the turns bucket can hold
	// that memory does not. nil otherwise (then every turn memory lacks
	// is looked up).
	evicted map[string]struct{}
	// scratch: the fold started from nothing (no checkpoint) and has
	// folded nothing yet; whole: and the stream still holds its first
	// event, so the catch-up sees every turn it could be asked about.
	scratch, whole bool
	// bulk: the fold is catching up (see bulkSpread).
	bulk bool
	// creating, while a rebuild creates its buckets again beside its
	// read of the log, delivers how that went (see awaitBuckets); nil
	// otherwise.
	creating <-chan error
	// writing holds the turns of the flush in flight until it is
	// finished: the fold may have let go of them (pushed out of the
	// cache) before the turns bucket has them.
	writing map[string]lifecycle.Turn
	// born is when the projector was made, and evictedNewest the newest
	// id time (Unix ms) of a turn pushed out of the cache: a turn whose
	// ULID is younger than both (by unknownAfter) cannot be in the turns
	// bucket unless memory holds it, so a new turn is folded without a
	// KV read (see knownOnlyInKV).
	born          time.Time
	evictedNewest uint64

	// Read by Horizon outside the fold loop.
	streamAt atomic.Int64 // stream, in Unix nanoseconds
	ckptDone atomic.Uint64

	wmu         sync.Mutex
	turnWaiters map[string]*waiter
	// version counts changes to the views (Views.Version); it moves under
	// the write lock, so a reader that sees a state sees its version.
	version atomic.Uint64
	// roster caches Roster's rows for one version.
	roster atomic.Pointer[rosterRows]
	// seqWaiters are the WaitSeq callers, each woken only once the fold
	// reaches its position: a burst of sends (each waiting for its own
	// queued event) is not woken by every event folded before theirs.
	seqWaiters []seqWaiter

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

// New returns a Projector folding log into KV buckets of js, or, with
// Options.Memory, in memory only (js may then be nil). It does no I/O and
// starts nothing; Run does the work. Invalid options are reported by Run.
func New(log events.Log, js jetstream.JetStream, o Options) Projector {
	o.setDefaults()
	optErr := o.Validate()
	if js == nil && !o.Memory {
		optErr = errors.Join(optErr, fmt.Errorf("%w: no JetStream for the buckets (a fold without KV is Options.Memory)", ErrInvalidOptions))
	}
	stopCtx, stopCancel := context.WithCancel(context.Background())
	return &materializer{
		log: log, js: js, o: o, optErr: optErr,
		st:          newState(),
		cache:       newTurnCache(o.TurnCacheSize),
		dirty:       newDirtySet(),
		turnWaiters: map[string]*waiter{},
		subs:        map[chan Change]struct{}{},
		ready:       make(chan struct{}),
		stopCtx:     stopCtx, stopCancel: stopCancel,
		born: o.Now(),
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
	if m.o.UpTo > 0 && m.optErr == nil {
		return fmt.Errorf("%w: a fold up to #%d is a Rebuild; Run follows the log", ErrInvalidOptions, m.o.UpTo)
	}
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

// open ensures the buckets and, the first time, loads the checkpoint. A
// memory fold only looks for buckets it may read, and folds from the log's
// start when it finds none or cannot read their checkpoint.
func (m *materializer) open(ctx context.Context) error {
	if m.o.Memory {
		m.probe(ctx)
	} else if m.kvBuckets() == nil {
		b, err := ensureBuckets(ctx, m.js, m.o)
		if err != nil {
			return err
		}
		m.kvb.Store(b)
	}
	if m.loaded {
		return nil
	}
	var snap *snapshot
	if m.kvBuckets() != nil {
		var err error
		snap, err = m.loadCheckpoint(ctx)
		if err != nil && m.o.Memory {
			m.o.Logger.Warn("projections: memory fold cannot read the checkpoint; folding the log from its start", "err", err)
			snap, err = nil, nil
		}
		if err != nil {
			return err
		}
	}
	m.scratch = snap == nil
	if snap != nil {
		st := snap.state()
		m.mu.Lock()
		m.st = st
		m.version.Add(1)
		m.mu.Unlock()
		m.ckptSeq = snap.Seq
		m.ckptDone.Store(snap.Seq)
		m.setStream(snap.Stream)
		m.setApplied(snap.Seq)
	}
	m.ckptAt = time.Now()
	m.loaded = true
	return nil
}

// loop folds the log: catch up to its end, then follow it, retrying with
// backoff when the read breaks (the stream lost, the store full), until
// ctx ends. Each round first anchors the fold on the stream as it is.
func (m *materializer) loop(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	var said string
	var saidAt time.Time
	for {
		err := m.anchor(ctx)
		if err == nil {
			err = m.catchUp(ctx)
		}
		if err == nil {
			m.markReady()
			err = m.follow(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = errFollowEnded
		}
		// A lost stream or a full store fails every retry the same way:
		// say so when it changes, and every 30 s while it lasts.
		if msg := err.Error(); msg != said || time.Since(saidAt) >= 30*time.Second {
			m.o.Logger.Warn("projections: reading the log failed; retrying", "applied", m.Applied(), "err", err)
			said, saidAt = msg, time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

const batchSize = 512

// anchor makes sure the fold reads the stream that is there now. A stream
// created again (deleted, then recreated by an administrator or fleetd)
// is a new incarnation whose sequences restart: the fold keeps what it
// holds — the roster, sessions and open turns are now the only record of
// what the lost stream said — and folds the new stream from its first
// event. A beginning trimmed past the fold's position is reported once.
func (m *materializer) anchor(ctx context.Context) error {
	st, err := m.log.State(ctx)
	if err != nil {
		return err
	}
	m.logEnd = st.LastSeq
	switch {
	case m.stream.IsZero() && m.Applied() > st.LastSeq:
		// A checkpoint from before incarnations were recorded, ahead of
		// the stream's end: the stream is not the one it was taken of.
		m.reanchor(st)
	case m.stream.IsZero():
		m.setStream(st.Created)
	case !m.stream.Equal(st.Created):
		m.reanchor(st)
	}
	m.whole = m.scratch && m.Applied() == 0 && st.FirstSeq <= 1
	if st.Msgs > 0 && st.FirstSeq > m.Applied()+1 && st.FirstSeq != m.trimmed {
		m.trimmed = st.FirstSeq
		m.o.Logger.Warn("projections: the log was trimmed past the views' position; the events in between were never folded",
			"applied", m.Applied(), "first", st.FirstSeq)
	}
	return nil
}

// reanchor makes the fold follow a new incarnation of the stream from its
// first event, keeping the folded state.
func (m *materializer) reanchor(st events.StreamState) {
	from := max(st.FirstSeq, 1)
	m.o.Logger.Warn("projections: the stream is a new one (created again); the views keep what they hold and fold it from its start",
		"was_applied", m.Applied(), "from", from)
	m.mu.Lock()
	var open []lifecycle.Turn
	m.st.book.Turns(func(t lifecycle.Turn) bool {
		open = append(open, t)
		return true
	})
	for _, t := range open {
		// Their events are gone with the old stream; whatever comes next
		// comes from the new one's beginning on.
		t.FirstSeq = from
		m.st.book.Restore(t)
	}
	m.version.Add(1)
	m.mu.Unlock()
	// The ended turns stay: readers are answered from the cache until
	// their rows are written (dropping it lost a just-replied turn from
	// the views until the next flush). Their positions were in the old
	// stream; they ended before anything in the new one, so a queued
	// event it replays for one does not open it again (endedBefore).
	before := func(t lifecycle.Turn) lifecycle.Turn {
		if t.State.Final() {
			t.FirstSeq, t.LastSeq = 0, 0
		}
		return t
	}
	m.cache.rewrite(before)
	for _, pending := range []map[string]lifecycle.Turn{m.dirty.turns, m.writing} {
		for id, t := range pending {
			pending[id] = before(t)
		}
	}
	m.setStream(st.Created)
	m.scratch = false
	m.ckptStale = true
	m.trimmed = 0
	m.setApplied(from - 1)
}

func (m *materializer) setStream(t time.Time) {
	m.stream = t
	if t.IsZero() {
		m.streamAt.Store(0)
		return
	}
	m.streamAt.Store(t.UnixNano())
}

// catchUp folds what the log holds now, past the applied position, and
// writes it all.
func (m *materializer) catchUp(ctx context.Context) error {
	m.bulk = true
	defer func() { m.bulk = false }()
	if m.whole && m.evicted == nil {
		// A first start on a log without a checkpoint folds it all from
		// nothing, as a rebuild does: every ended turn a queued event
		// could name ended earlier in this read, so only those the cache
		// let go of are asked of KV — not every turn older than this
		// process, which was a KV read per turn of the log.
		m.evicted = map[string]struct{}{}
		defer func() { m.evicted = nil }()
	}
	m.whole, m.scratch = false, false
	// The log is read and decoded ahead, in batches, while the fold and
	// its view writes work on the ones before: on a rebuild the two are
	// about even, and one waits on the server while the other computes.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []events.Event, readAhead)
	var readErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(batches)
		batch := make([]events.Event, 0, batchSize)
		q := events.Query{FromSeq: m.Applied() + 1, ToSeq: m.o.UpTo, Skips: true, Decoders: decoders(),
			Prefetch: CatchUpPrefetch, PrefetchBytes: m.catchUpPrefetchBytes()}
		for ev, err := range m.log.Read(ctx, q) {
			if err != nil {
				readErr = err
				return
			}
			if batch = append(batch, ev); len(batch) < batchSize {
				continue
			}
			select {
			case batches <- batch:
			case <-ctx.Done():
				return
			}
			batch = make([]events.Event, 0, batchSize)
		}
		if len(batch) > 0 {
			select {
			case batches <- batch:
			case <-ctx.Done():
			}
		}
	}()
	// The view writes go on a goroutine of their own too, one flush at a
	// time, while the fold goes on: the fold, the decoding and the writes
	// each take about a third of a rebuild.
	var writing chan flushResult // nil while no flush is in flight
	wait := func() error {
		r := <-writing
		writing = nil
		return m.finishFlush(r)
	}
	var restoreGC func() // set once the catch-up is long (bulkGCAfter)
	defer func() {
		if restoreGC != nil {
			restoreGC()
		}
	}()
	end := m.logEnd
	if m.o.UpTo > 0 {
		end = min(end, m.o.UpTo)
	}
	if end >= m.Applied()+bulkGCAfter {
		// Known long from the start (a rebuild, a first start on a big
		// log): raised now, not after its first bulkGCAfter events.
		restoreGC = raiseGC(m.o.BulkGC)
	}
	folded := 0
	fold := func() error {
		for batch := range batches {
			if err := m.fold(ctx, batch); err != nil {
				return err
			}
			if folded += len(batch); restoreGC == nil && folded >= bulkGCAfter {
				restoreGC = raiseGC(m.o.BulkGC)
			}
			select {
			case r := <-writing:
				writing = nil
				if err := m.finishFlush(r); err != nil {
					return err
				}
			default:
			}
			if !m.flushDue() {
				continue
			}
			if err := m.awaitBuckets(); err != nil {
				return err
			}
			if writing != nil && m.dirty.ended >= 2*batchSize*bulkSpread {
				// The writes fall behind: hold the fold rather than
				// let what waits to be written grow without bound.
				if err := wait(); err != nil {
					return err
				}
			}
			if writing != nil {
				continue
			}
			job, ok, err := m.prepare(false)
			if err != nil {
				return err
			}
			if ok {
				writing = make(chan flushResult, 1)
				go func(done chan<- flushResult) { done <- m.do(ctx, job) }(writing)
			}
		}
		return nil
	}
	err := fold()
	if writing != nil {
		// Also on failure: nothing of this catch-up writes after it returns.
		err = errors.Join(err, wait())
	}
	if err != nil {
		cancel()
		<-read
		return err
	}
	<-read
	if readErr != nil {
		return readErr
	}
	if err := m.awaitBuckets(); err != nil {
		return err
	}
	return m.flush(ctx, true)
}

// readAhead is how many decoded batches a catch-up reads ahead of its
// fold.
const readAhead = 4

// CatchUpPrefetch is how many messages a catch-up's read pulls ahead of
// what it has taken: four times a reader's default. A catch-up reads in
// bulk, and with the default each pull ran dry between the server's
// deliveries while the fold, the decoding and the view writes shared the
// cores: a rebuild of 50,000 events took 338–351 ms with 512 and 294–324
// ms with 2,048 (SyncAlways, 2-core VM, medians of seven; 4,096 was no
// better). A raw read gains as much from it, so the bench's floor pulls
// the same way (CatchUpPrefetchBytes).
const CatchUpPrefetch = 2048

// CatchUpPrefetchBytes bounds a catch-up's pull in bytes as well, for a
// server that takes messages of up to maxPayload bytes: 2,048 events of
// the largest size would be gigabytes held in the client. The bound is
// above what one such event needs, so a pull never asks for less than
// one message; ordinary events (half a kilobyte) never reach it.
func CatchUpPrefetchBytes(maxPayload int64) int {
	return max(16<<20, int(maxPayload)+64<<10)
}

func (m *materializer) catchUpPrefetchBytes() int {
	if m.js == nil {
		return CatchUpPrefetchBytes(0)
	}
	return CatchUpPrefetchBytes(m.js.Conn().MaxPayload())
}

// decoders is how many goroutines decode a catch-up's events (see
// events.Query.Decoders): one a core. The fold waited on the reading
// goroutine for three fifths of a rebuild (2 cores), and decoding was
// two thirds of that goroutine's work.
func decoders() int { return runtime.GOMAXPROCS(0) }

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
	// The view writes go on a goroutine of their own, one flush at a
	// time: a fold that waited for them (a store syncing each write, a
	// bucket electing a leader) would not wake the callers waiting for a
	// reply, nor judge hosts' liveness, meanwhile.
	var writing chan flushResult // nil while no flush is in flight
	flushCtx, cancelFlush := context.WithCancel(ctx)
	defer func() {
		cancelFlush()
		if writing != nil {
			_ = m.finishFlush(<-writing) // what failed is written by the last flush
		}
	}()
	startFlush := func(force bool) {
		if writing != nil || !m.wfail.due(time.Now()) {
			return
		}
		job, ok, err := m.prepare(force)
		if err != nil || !ok {
			m.wrote(err)
			return
		}
		writing = make(chan flushResult, 1)
		go func(done chan<- flushResult) { done <- m.do(flushCtx, job) }(writing)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-writing:
			writing = nil
			m.wrote(m.finishFlush(r))
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
			if m.flushDue() {
				startFlush(false)
			}
		case <-flushT.C:
			startFlush(false)
		case <-sweepT.C:
			m.sweep()
		}
	}
}

// flushDue reports whether enough has changed to write before the tick.
func (m *materializer) flushDue() bool {
	if m.bulk {
		// Roster and session rows and open turns wait for the
		// checkpoint (see prepare and collect).
		return m.dirty.ended >= batchSize*bulkSpread || m.checkpointDue()
	}
	// Live, CheckpointInterval is the flush tick's business: a flush
	// (and a checkpoint's encoding) started by the event that just came
	// in would sit on the fold's goroutine in that turn's path.
	return m.dirty.len() >= batchSize || m.sinceCkpt >= m.o.CheckpointEvery
}

// checkpointDue reports whether the next flush should write a checkpoint.
func (m *materializer) checkpointDue() bool {
	every, interval := m.o.CheckpointEvery, m.o.CheckpointInterval
	if m.bulk {
		every *= bulkCheckpointSpread
		interval *= bulkCheckpointInterval
	}
	return m.sinceCkpt >= every || time.Since(m.ckptAt) >= interval
}

// bulkSpread is how much further apart turn writes are while the fold
// catches up (a rebuild, a start behind the log): each write batch is
// amortised over more events while nobody waits for the views to be
// current yet.
const bulkSpread = 8

// bulkCheckpointSpread is how much further apart (in events) checkpoints
// are while the fold catches up. A checkpoint holds the whole state (some
// megabytes with a thousand agents): one every thousand events was a
// third of a rebuild's work. CheckpointInterval still bounds how much
// fold a crash mid-catch-up throws away.
const bulkCheckpointSpread = 64

// bulkCheckpointInterval is how much further apart in time checkpoints
// are while the fold catches up. A checkpoint writes every agent's and
// session's row with it: one a second was a sixth of a rebuild's writes
// with a thousand agents. A crash mid-catch-up loses at most that much
// fold, which the next start folds again.
const bulkCheckpointInterval = 5

// writeTrouble spaces out view writes while they fail (a full store
// refuses every one) and keeps the log to one line when they start
// failing, one every 30 s while they still do, and one when they work
// again: retrying every flush tick and logging each joined failure wrote
// tens of megabytes of log in minutes.
type writeTrouble struct {
	failures int
	since    time.Time
	next     time.Time
	logged   time.Time
	backoff  time.Duration
}

// due reports whether a write may be tried now.
func (w *writeTrouble) due(now time.Time) bool { return w.failures == 0 || !now.Before(w.next) }

// wrote records how a flush went.
func (m *materializer) wrote(err error) {
	w, now := &m.wfail, time.Now()
	if err == nil {
		if w.failures > 0 {
			m.o.Logger.Info("projections: writing views works again", "failures", w.failures, "for", now.Sub(w.since).Round(time.Millisecond))
		}
		*w = writeTrouble{}
		return
	}
	w.failures++
	w.backoff = min(max(2*w.backoff, m.o.FlushInterval), 10*time.Second)
	w.next = now.Add(w.backoff)
	switch {
	case w.failures == 1:
		w.since, w.logged = now, now
		m.o.Logger.Warn("projections: writing views failed; retrying with backoff", "err", err)
	case now.Sub(w.logged) >= 30*time.Second:
		w.logged = now
		m.o.Logger.Warn("projections: writing views still fails", "failures", w.failures, "since", w.since, "err", err)
	}
}

func (m *materializer) Rebuild(ctx context.Context) error {
	if err := m.start(); err != nil {
		return err
	}
	defer m.finish()
	st, err := m.log.State(ctx)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	m.logEnd = st.LastSeq
	switch {
	case m.o.Memory:
		return m.rebuildMemory(ctx, st)
	case st.FirstSeq > 1:
		return m.rebuildFromCheckpoint(ctx, st)
	}
	m.kvb.Store(nil)
	m.mu.Lock()
	m.st = newState()
	m.cache.reset()
	m.version.Add(1)
	m.mu.Unlock()
	m.dirty = newDirtySet()
	m.ckptAt = time.Now()
	m.sinceCkpt, m.ckptSeq, m.slot = 0, 0, 0
	m.ckptDone.Store(0)
	m.applied.Store(0)
	m.setStream(st.Created)
	m.loaded = true
	// The buckets are dropped and created again while the log is read
	// and folded: nothing is written before the first flush, which waits
	// for them (awaitBuckets), and nothing is read from them meanwhile
	// (kvb is nil). Created first, they held up the read — 12 to 17 ms
	// of a 340 ms rebuild of 50,000 events with SyncAlways — and dropping
	// them first held it up again.
	creating := make(chan error, 1)
	m.creating = creating
	go func() {
		if err := dropBuckets(ctx, m.js, m.o); err != nil {
			creating <- err
			return
		}
		b, err := ensureBuckets(ctx, m.js, m.o)
		if err == nil {
			m.kvb.Store(b)
		}
		creating <- err
	}()
	m.evicted = map[string]struct{}{}
	err = errors.Join(m.catchUp(ctx), m.awaitBuckets())
	m.evicted = nil
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	m.markReady()
	return nil
}

// awaitBuckets waits for the buckets a rebuild is creating, if it is, and
// says how that went. A fold before it writes nothing: prepare finds no
// buckets and leaves what changed in the dirty set, where the fold still
// finds a turn the cache let go of (endedBefore).
func (m *materializer) awaitBuckets() error {
	if m.creating == nil {
		return nil
	}
	err := <-m.creating
	m.creating = nil
	return err
}

// rebuildFromCheckpoint rebuilds the views of a trimmed log: its
// beginning is gone, so the fold starts from the latest checkpoint of
// this stream, which must cover the first event still there. The roster
// and sessions are dropped and written again from the checkpoint; the
// turns bucket is kept, because it is now the only record of the final
// turns whose events were trimmed (they expire by TurnTTL).
func (m *materializer) rebuildFromCheckpoint(ctx context.Context, st events.StreamState) error {
	m.kvb.Store(nil)
	b, err := ensureBuckets(ctx, m.js, m.o)
	if err != nil {
		return err
	}
	m.kvb.Store(b)
	snap, err := m.loadCheckpoint(ctx)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	if err := covers(snap, st); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	m.kvb.Store(nil)
	if err := dropBuckets(ctx, m.js, m.o, 0, 1); err != nil {
		return err
	}
	if b, err = ensureBuckets(ctx, m.js, m.o); err != nil {
		return err
	}
	m.kvb.Store(b)
	// The buckets were dropped: every view the checkpoint holds is
	// written again.
	state, dirty := snap.state(), newDirtySet()
	for id, a := range state.agents {
		if a.Registered {
			dirty.agents[id] = struct{}{}
		}
	}
	for name := range state.sessions {
		dirty.sessions[name] = struct{}{}
	}
	state.book.Turns(func(t lifecycle.Turn) bool {
		dirty.turns[t.ID] = t
		return true
	})
	return m.resume(ctx, state, snap.Seq, st.Created, dirty)
}

// resume ends a rebuild that starts from a checkpoint's state (or, in
// memory, from nothing): the fold becomes state, folded up to seq of the
// stream created at created, with dirty the views still to write, and
// goes on with the rest of the log.
func (m *materializer) resume(ctx context.Context, state *state, seq uint64, created time.Time, dirty dirtySet) error {
	m.mu.Lock()
	m.st = state
	m.cache.reset()
	m.version.Add(1)
	m.mu.Unlock()
	m.dirty = dirty
	m.ckptAt = time.Now()
	m.sinceCkpt, m.ckptSeq = 0, seq
	m.ckptDone.Store(seq)
	m.setStream(created)
	m.applied.Store(seq)
	m.loaded = true
	if err := m.catchUp(ctx); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	m.markReady()
	return nil
}

// covers says why a checkpoint cannot stand in for the trimmed beginning
// of the stream st, or nil when it can.
func covers(snap *snapshot, st events.StreamState) error {
	switch {
	case snap == nil:
		return fmt.Errorf("%w: the log starts at %d and there is no checkpoint", ErrTrimmed, st.FirstSeq)
	case !snap.Stream.IsZero() && !snap.Stream.Equal(st.Created):
		return fmt.Errorf("%w: the checkpoint is of another stream (created %s, this one %s)", ErrTrimmed, snap.Stream, st.Created)
	case snap.Seq+1 < st.FirstSeq:
		return fmt.Errorf("%w: the log starts at %d, the checkpoint covers up to %d", ErrTrimmed, st.FirstSeq, snap.Seq)
	}
	return nil
}

// rebuildMemory folds the log again into an empty memory state: from its
// start, or, when its beginning was trimmed, from the latest readable
// checkpoint (a fold up to a point of the past folds what is left: the
// checkpoint describes the present). It writes nothing.
func (m *materializer) rebuildMemory(ctx context.Context, st events.StreamState) error {
	state, seq := newState(), uint64(0)
	if st.FirstSeq > 1 && m.o.UpTo == 0 {
		m.probe(ctx)
		var snap *snapshot
		if m.kvBuckets() != nil {
			var err error
			if snap, err = m.loadCheckpoint(ctx); err != nil {
				return fmt.Errorf("rebuild: %w", err)
			}
		}
		if err := covers(snap, st); err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		state, seq = snap.state(), snap.Seq
	}
	return m.resume(ctx, state, seq, st.Created, newDirtySet())
}

func (m *materializer) Horizon() Horizon {
	h := Horizon{Applied: m.Applied(), Checkpoint: m.ckptDone.Load()}
	if ns := m.streamAt.Load(); ns != 0 {
		h.Stream = time.Unix(0, ns)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.st.book.Turns(func(t lifecycle.Turn) bool {
		first := t.FirstSeq
		if first == 0 {
			first = 1
		}
		if h.OpenFrom == 0 || first < h.OpenFrom {
			h.OpenFrom = first
		}
		return true
	})
	for id, a := range m.st.agents {
		switch {
		case !a.Registered:
		case a.Exited:
			h.Gone = append(h.Gone, id)
		default:
			h.Live = append(h.Live, id)
		}
	}
	slices.Sort(h.Live)
	slices.Sort(h.Gone)
	return h
}

// seqWaiter is one WaitSeq caller: ch is closed once seq is applied.
type seqWaiter struct {
	seq uint64
	ch  chan struct{}
}

// setApplied advances the applied position and wakes the WaitSeq callers
// it reached.
func (m *materializer) setApplied(seq uint64) {
	m.applied.Store(seq)
	m.wmu.Lock()
	m.seqWaiters = slices.DeleteFunc(m.seqWaiters, func(w seqWaiter) bool {
		if w.seq > seq {
			return false
		}
		close(w.ch)
		return true
	})
	m.wmu.Unlock()
}

// notify wakes WaitTurn callers of the turns that changed and the
// subscribers of every change.
func (m *materializer) notify(changes []Change) {
	woke := false
	m.wmu.Lock()
	for _, c := range changes {
		if c.Kind != KindTurn {
			continue
		}
		if w, ok := m.turnWaiters[c.Key]; ok {
			close(w.ch)
			delete(m.turnWaiters, c.Key)
			woke = true
		}
	}
	m.wmu.Unlock()
	if woke {
		runtime.Gosched()
	}
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
