package herdrbridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
)

// writeGate paces the bridge's appends while the log refuses them (a full
// store, a lost stream, JetStream away). Every delivery worker, the herdr
// watcher and spawns share it: after a refused write, the next one of any
// of them waits a backoff that doubles per refused round up to a bound,
// and the refusals are logged once, then every 30 s, then once when
// writes work again. Before, each worker retried every Poll and logged
// each failure: a full store made a retry storm of log lines.
type writeGate struct {
	log  *slog.Logger
	now  func() time.Time
	poll time.Duration
	max  time.Duration

	mu       sync.Mutex
	failures int
	since    time.Time
	logged   time.Time
	backoff  time.Duration
	until    time.Time
	// refused is when a write was last refused.
	refused time.Time
}

// maxWriteBackoff bounds the wait between refused write rounds.
const maxWriteBackoff = 10 * time.Second

// wait blocks until a write may be tried; false when ctx ended.
func (g *writeGate) wait(ctx context.Context) bool {
	g.mu.Lock()
	d := g.until.Sub(g.now())
	g.mu.Unlock()
	if d <= 0 {
		return ctx.Err() == nil
	}
	return sleep(ctx, d)
}

// lastRefused is when the log last refused a write (zero: never). The
// agents' hooks spool their events meanwhile, and those arrive only once
// the log takes writes again: a turn's timers restart from here.
func (g *writeGate) lastRefused() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failures > 0 {
		return g.now()
	}
	return g.refused
}

// troubled reports whether writes are being refused now.
func (g *writeGate) troubled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failures > 0
}

// done records a write's outcome. A concurrency conflict is the log
// working as it should.
func (g *writeGate) done(ctx context.Context, err error) {
	if errors.Is(err, events.ErrConcurrency) || (err != nil && ctx.Err() != nil) {
		err = nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if err == nil {
		if g.failures > 0 {
			g.log.Info("the log takes writes again", "refused", g.failures, "for", now.Sub(g.since).Round(time.Millisecond))
		}
		g.failures, g.backoff, g.until = 0, 0, time.Time{}
		return
	}
	g.failures++
	g.refused = now
	if now.Before(g.until) {
		return // another worker's write of the same round
	}
	g.backoff = min(max(2*g.backoff, g.poll), g.max)
	g.until = now.Add(g.backoff)
	switch {
	case g.failures == 1:
		g.since, g.logged = now, now
		g.log.Warn("the log refuses writes; delivery waits and retries with backoff", "err", err)
	case now.Sub(g.logged) >= 30*time.Second:
		g.logged = now
		g.log.Warn("the log still refuses writes", "refused", g.failures, "since", g.since, "backoff", g.backoff, "err", err)
	}
}

// warnWrite logs a failed write at a call site: at debug level while the
// gate reports the trouble, so a refusing log costs a line per 30 s, not
// one per worker and retry.
func (b *Bridge) warnWrite(msg string, err error, args ...any) {
	level := slog.LevelWarn
	if b.writes.troubled() {
		level = slog.LevelDebug
	}
	b.log.Log(context.Background(), level, msg, append(args, "err", err)...)
}
