package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The codes of Health: what stands between the fabric and its log.
const (
	// HealthOK: the stream is there and the store has room.
	HealthOK = ""
	// HealthStreamLost: FLEET is missing (ErrStreamLost).
	HealthStreamLost = "stream_lost"
	// HealthStoreFull: JetStream refuses writes for lack of storage
	// (ErrStoreFull): nothing new can be recorded, not even a turn's end.
	HealthStoreFull = "store_full"
	// HealthStoreLow: the store is within the reserve of its limit. New
	// work is refused so that the turns already accepted can still record
	// their progress; writes still succeed.
	HealthStoreLow = "store_low"
	// HealthUnavailable: JetStream does not answer.
	HealthUnavailable = "unavailable"
)

// ErrUnavailable means JetStream does not answer (no meta leader, no
// connection): the log can be neither read nor written for now.
var ErrUnavailable = errors.New("events: JetStream is unavailable")

// Health is the log's condition as a Watcher last saw it.
type Health struct {
	// Code is HealthOK or what is wrong; Reason says it for people.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Since is when the current code began.
	Since time.Time `json:"since,omitzero"`
	// Stream is the stream's last known state (zero while lost).
	Stream StreamState `json:"-"`
	// StoreUsed and StoreMax are the JetStream store's use and limit in
	// bytes (StoreMax 0: no limit known).
	StoreUsed int64 `json:"store_used,omitempty"`
	StoreMax  int64 `json:"store_max,omitempty"`
}

// OK reports whether nothing is wrong.
func (h Health) OK() bool { return h.Code == HealthOK }

// Err is nil when h is OK, else a *HealthError wrapping the sentinel for
// its code (ErrStreamLost, ErrStoreFull, ErrUnavailable).
func (h Health) Err() error {
	switch h.Code {
	case HealthOK:
		return nil
	case HealthStreamLost:
		return &HealthError{Code: h.Code, Reason: h.Reason, err: ErrStreamLost}
	case HealthStoreFull, HealthStoreLow:
		return &HealthError{Code: h.Code, Reason: h.Reason, err: ErrStoreFull}
	default:
		return &HealthError{Code: h.Code, Reason: h.Reason, err: ErrUnavailable}
	}
}

// HealthError is an unhealthy log as an error: its Code (a Health code)
// and Reason, wrapping the matching sentinel.
type HealthError struct {
	Code, Reason string
	err          error
}

func (e *HealthError) Error() string { return e.Reason }

// Unwrap is the sentinel for the code.
func (e *HealthError) Unwrap() error { return e.err }

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	JS jetstream.JetStream
	// Interval between checks. Default 2s. A failed append (Observe)
	// brings the next check forward.
	Interval time.Duration
	// MaxStore is the server's JetStream store limit when it is known
	// (a standalone embedded server's --max-store); 0 uses the account's
	// limit, if it has one, and otherwise only failed writes tell.
	MaxStore int64
	// Reserve is the share of the store limit kept for turns already
	// accepted: from (1-Reserve)·limit on, Health is HealthStoreLow.
	// Default 0.1; negative: none.
	Reserve float64
	// RecreateAfter: create FLEET again once it has been missing this
	// long (0: never; an administrator does it). Stream configures it.
	RecreateAfter time.Duration
	Stream        StreamOptions
	Logger        *slog.Logger
	Now           func() time.Time
}

func (c *WatcherConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = 2 * time.Second
	}
	if c.Reserve == 0 {
		c.Reserve = 0.1
	}
	if c.Reserve < 0 {
		c.Reserve = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem at once.
func (c WatcherConfig) Validate() error {
	var errs []error
	if c.JS == nil {
		errs = append(errs, errors.New("watcher: no JetStream"))
	}
	if c.MaxStore < 0 || c.RecreateAfter < 0 || c.Reserve >= 1 {
		errs = append(errs, fmt.Errorf("watcher: MaxStore %d, RecreateAfter %s, Reserve %.2f: want ≥ 0, ≥ 0, < 1", c.MaxStore, c.RecreateAfter, c.Reserve))
	}
	return errors.Join(errs...)
}

// Watcher keeps an eye on the log's stream and store: it notices FLEET
// missing (and, when allowed, creates it again), the store full or
// nearly full, and JetStream not answering, and says so through Health
// until it is fixed. Appends report to it (Observe), so a full store is
// known from the first refused write even where no limit can be read.
type Watcher struct {
	cfg  WatcherConfig
	kick chan struct{}

	mu           sync.Mutex
	health       Health
	changed      chan struct{}
	observedFull bool
	lostSince    time.Time
}

// NewWatcher returns a watcher that is not running. It does no I/O; its
// Health is OK until Run's first check.
func NewWatcher(cfg WatcherConfig) (*Watcher, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Watcher{cfg: cfg, kick: make(chan struct{}, 1), changed: make(chan struct{})}, nil
}

// Health is the condition as of the last check or observed append.
func (w *Watcher) Health() Health {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.health
}

// Changed is closed at the next change of Health's code.
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Observe hears an append's outcome (wire it to Options.OnAppend). A
// refused write for lack of storage makes Health say so at once; the next
// successful one clears it. It never blocks.
func (w *Watcher) Observe(err error) {
	full := errors.Is(err, ErrStoreFull)
	w.mu.Lock()
	changed := full != w.observedFull
	w.observedFull = full
	h := w.health
	w.mu.Unlock()
	if full && h.Code != HealthStoreFull {
		// Known at once from the refusal; the kicked check adds the
		// numbers.
		w.set(w.storeHealth(h, 0, h.StoreMax))
	}
	if changed || (err != nil && !full) {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// Run checks at once, then every Interval (sooner after a failed append),
// until ctx ends. It returns nil then.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, max(w.cfg.Interval, 2*time.Second))
		w.Check(cctx)
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.kick:
			// A burst of failed appends checks once, not once each.
			if !sleepCtx(ctx, w.cfg.Interval/8) {
				return nil
			}
		}
	}
}

// Check looks at the stream and the store now and returns the health it
// sets.
func (w *Watcher) Check(ctx context.Context) Health {
	st, err := streamState(ctx, w.cfg.JS)
	if errors.Is(err, ErrStreamLost) {
		st, err = w.lost(ctx, err)
	}
	if ctx.Err() != nil && err != nil {
		return w.Health() // stopping: say nothing new
	}
	var h Health
	switch {
	case errors.Is(err, ErrStreamLost):
		h = Health{Code: HealthStreamLost, Reason: err.Error()}
	case err != nil:
		h = Health{Code: HealthUnavailable, Reason: "JetStream does not answer: " + err.Error()}
	default:
		w.mu.Lock()
		w.lostSince = time.Time{}
		w.mu.Unlock()
		used, limit := w.store(ctx)
		h = w.storeHealth(Health{Stream: st}, used, limit)
	}
	w.set(h)
	return w.Health()
}

// lost handles a missing stream: it says since when, and creates the
// stream again once it has been missing RecreateAfter.
func (w *Watcher) lost(ctx context.Context, cause error) (StreamState, error) {
	now := w.cfg.Now()
	w.mu.Lock()
	if w.lostSince.IsZero() {
		w.lostSince = now
	}
	since := w.lostSince
	w.mu.Unlock()
	what := fmt.Sprintf("the %s stream is missing (since %s): nothing can be sent or recorded", Stream, since.UTC().Format(time.RFC3339))
	if w.cfg.RecreateAfter <= 0 {
		return StreamState{}, fmt.Errorf("%w: %s; fleetd resumes by itself once an administrator creates it again", ErrStreamLost, what)
	}
	if now.Sub(since) < w.cfg.RecreateAfter {
		return StreamState{}, fmt.Errorf("%w: %s; fleetd creates it again at %s", ErrStreamLost, what, since.Add(w.cfg.RecreateAfter).UTC().Format(time.RFC3339))
	}
	if _, err := EnsureStream(ctx, w.cfg.JS, w.cfg.Stream); err != nil {
		return StreamState{}, fmt.Errorf("%w: %s; creating it again failed: %v", ErrStreamLost, what, err)
	}
	w.cfg.Logger.Warn("created the missing stream again; the views keep what they held", "stream", Stream, "missing_since", since)
	return streamState(ctx, w.cfg.JS)
}

// store reads the store's use and limit; limit 0 when none is known.
func (w *Watcher) store(ctx context.Context) (used, limit int64) {
	ai, err := w.cfg.JS.AccountInfo(ctx)
	if err != nil {
		return 0, w.cfg.MaxStore
	}
	used, limit = int64(ai.Store), w.cfg.MaxStore
	if limit == 0 && ai.Limits.MaxStore > 0 {
		limit = ai.Limits.MaxStore
	}
	return used, limit
}

// storeHealth completes h with the store's condition.
func (w *Watcher) storeHealth(h Health, used, limit int64) Health {
	h.StoreUsed, h.StoreMax = used, limit
	w.mu.Lock()
	observed := w.observedFull
	w.mu.Unlock()
	switch {
	case limit > 0 && used > limit, observed:
		h.Code = HealthStoreFull
		h.Reason = "the JetStream store is full: writes are refused, so no turn can progress or be recorded as failed until space is freed (retention trims what no open turn needs; raise --max-store or free space)"
		if limit > 0 && used > 0 {
			h.Reason = fmt.Sprintf("the JetStream store is full (%s of %s): writes are refused, so no turn can progress or be recorded as failed until space is freed (retention trims what no open turn needs; raise --max-store or free space)", bytesText(used), bytesText(limit))
		}
	case limit > 0 && float64(used) >= (1-w.cfg.Reserve)*float64(limit):
		h.Code = HealthStoreLow
		h.Reason = fmt.Sprintf("the JetStream store is nearly full (%s of %s): new sends are refused so the turns already accepted can finish", bytesText(used), bytesText(limit))
	default:
		h.Code, h.Reason = HealthOK, ""
	}
	return h
}

// set records h, keeping Since while the code stays, and announces a
// change of code.
func (w *Watcher) set(h Health) {
	w.mu.Lock()
	old := w.health
	if h.Code == old.Code && !old.Since.IsZero() {
		h.Since = old.Since
	} else {
		h.Since = w.cfg.Now()
	}
	w.health = h
	if h.Code != old.Code {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
	if h.Code == old.Code {
		return
	}
	if h.OK() {
		w.cfg.Logger.Info("the log is healthy again", "was", old.Code)
	} else {
		w.cfg.Logger.Warn("the log is unhealthy", "code", h.Code, "reason", h.Reason)
	}
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
