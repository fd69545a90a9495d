package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// Horizoner is what the compactor needs of the projections: what they
// still need from the log.
type Horizoner interface {
	Horizon() projections.Horizon
}

// Config configures a Compactor.
type Config struct {
	JS  jetstream.JetStream
	Log events.Log
	// Views says what the projections need (projections.Projector).
	Views  Horizoner
	Policy Policy
	// Interval between sweeps; default 1 min. Wake brings one forward.
	Interval time.Duration
	// Ready, when set, must say true for a sweep to trim: the gateway
	// waits until its herdr bridge, which folds the log from its start,
	// has caught up, so a trim never overtakes it mid-read.
	Ready  func() bool
	Logger *slog.Logger
	Now    func() time.Time
	// OnSweep hears every sweep (tests, metrics).
	OnSweep func(Sweep)
}

func (c *Config) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.JS == nil {
		errs = append(errs, errors.New("retention: no JetStream"))
	}
	if c.Log == nil {
		errs = append(errs, errors.New("retention: no Log"))
	}
	if c.Views == nil {
		errs = append(errs, errors.New("retention: no Views"))
	}
	if c.Policy.MaxAge < 0 || c.Policy.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: negative age or size", ErrPolicy))
	}
	return errors.Join(errs...)
}

// Sweep is what one pass did.
type Sweep struct {
	// Cut is where the policy alone would trim to; Floor where the sweep
	// trimmed to, after what readers need (0 for both: nothing to do).
	Cut, Floor uint64
	// FirstSeq is the stream's first sequence before and after.
	FirstBefore, FirstAfter uint64
	// Removed counts the events trimmed.
	Removed uint64
	// Skipped says why the sweep trimmed nothing, when it did not try.
	Skipped string
}

// Compactor applies a Policy to FLEET (see the package doc).
type Compactor struct {
	cfg  Config
	wake chan struct{}

	mu      sync.Mutex
	lastErr string
}

// New returns a compactor that is not running. It does no I/O.
func New(cfg Config) (*Compactor, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Compactor{cfg: cfg, wake: make(chan struct{}, 1)}, nil
}

// Wake asks for a sweep now (the store is filling up). It never blocks.
func (c *Compactor) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run sweeps every Interval (and when woken) until ctx ends; it returns
// nil then. A failed sweep is logged (once per distinct failure) and
// retried at the next one.
func (c *Compactor) Run(ctx context.Context) error {
	if c.cfg.Policy.Forever() {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.wake:
		}
		sw, err := c.Sweep(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.report(sw, err)
	}
}

func (c *Compactor) report(sw Sweep, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != c.lastErr {
			c.lastErr = msg
			c.cfg.Logger.Warn("retention: trimming the log failed; trying again at the next sweep", "err", err)
		}
		return
	}
	c.lastErr = ""
	if sw.Removed > 0 {
		c.cfg.Logger.Info("retention: trimmed the log", "removed", sw.Removed, "floor", sw.Floor, "cut", sw.Cut,
			"first_before", sw.FirstBefore, "first_after", sw.FirstAfter, "policy", c.cfg.Policy.String())
	}
}

// The subjects whose events belong to a turn: once the turn is final and
// below the floor, they go.
var turnSubjects = []string{
	"fleet.agent.*.queued", "fleet.agent.*.typed", "fleet.agent.*.submitted", "fleet.agent.*.replied",
	"fleet.agent.*.failed", "fleet.agent.*.deferred", "fleet.role.*.queued", "fleet.role.*.cancelled",
}

// The subjects that say an agent's or a host's state, latest first: the
// last of each stays while its agent lives.
var stateSubjects = []string{
	"fleet.agent.*.registered", "fleet.agent.*.status", "fleet.agent.*.session", "fleet.agent.*.attention",
	"fleet.agent.*.exited", "fleet.host.*.up", "fleet.host.*.down", "fleet.host.*.herdr",
}

// Sweep trims once, now.
func (c *Compactor) Sweep(ctx context.Context) (Sweep, error) {
	sw, err := c.sweep(ctx)
	if c.cfg.OnSweep != nil {
		c.cfg.OnSweep(sw)
	}
	return sw, err
}

func (c *Compactor) sweep(ctx context.Context) (Sweep, error) {
	var sw Sweep
	if c.cfg.Policy.Forever() {
		sw.Skipped = "the policy keeps everything"
		return sw, nil
	}
	if c.cfg.Ready != nil && !c.cfg.Ready() {
		sw.Skipped = "a reader is still catching up"
		return sw, nil
	}
	st, err := c.cfg.Log.State(ctx)
	if err != nil {
		return sw, fmt.Errorf("retention: %w", err)
	}
	sw.FirstBefore, sw.FirstAfter = st.FirstSeq, st.FirstSeq
	h := c.cfg.Views.Horizon()
	switch {
	case h.Stream.IsZero() || !h.Stream.Equal(st.Created):
		sw.Skipped = "the views do not follow this stream yet"
		return sw, nil
	case h.Checkpoint == 0:
		sw.Skipped = "the views have no checkpoint yet"
		return sw, nil
	}
	cut, err := c.cut(ctx, st)
	if err != nil {
		return sw, err
	}
	floor := min(cut, h.Checkpoint+1)
	if h.OpenFrom > 0 {
		floor = min(floor, h.OpenFrom)
	}
	sw.Cut, sw.Floor = cut, floor
	if floor <= st.FirstSeq {
		return sw, nil
	}
	trim := func(subject string, below uint64) error {
		n, err := events.Trim(ctx, c.cfg.JS, subject, below)
		sw.Removed += n
		return err
	}
	// Turn events: every turn with an event below the floor is final.
	for _, subj := range turnSubjects {
		if err := trim(subj, floor); err != nil {
			return sw, err
		}
	}
	// Exited agents: all of it.
	gone := map[string]bool{}
	for _, id := range h.Gone {
		gone[id] = true
		if err := trim("fleet.agent."+id+".>", floor); err != nil {
			return sw, err
		}
	}
	// State events: all but the last on each subject.
	for _, filter := range stateSubjects {
		counts, err := events.SubjectCounts(ctx, c.cfg.JS, filter)
		if err != nil {
			return sw, err
		}
		for subj, n := range counts {
			cat, id, _, err := events.ParseSubject(subj)
			if n < 2 || err != nil || cat == events.CategoryAgent && gone[id] {
				continue
			}
			last, err := events.LastSeqOn(ctx, c.cfg.JS, subj)
			if err != nil {
				return sw, err
			}
			if below := min(floor, last); below > st.FirstSeq {
				if err := trim(subj, below); err != nil {
					return sw, err
				}
			}
		}
	}
	// Done jobs: all of it, once done is below the floor too.
	done, err := events.SubjectCounts(ctx, c.cfg.JS, "fleet.job.*.done")
	if err != nil {
		return sw, err
	}
	for subj := range done {
		_, job, _, err := events.ParseSubject(subj)
		if err != nil {
			continue
		}
		last, err := events.LastSeqOn(ctx, c.cfg.JS, subj)
		if err != nil {
			return sw, err
		}
		if last < floor {
			if err := trim("fleet.job."+job+".>", floor); err != nil {
				return sw, err
			}
		}
	}
	if after, err := c.cfg.Log.State(ctx); err == nil {
		sw.FirstAfter = after.FirstSeq
	}
	return sw, nil
}

// cut is where the policy alone trims to: the first event younger than
// MaxAge, or past the oldest events beyond MaxBytes, whichever is later.
func (c *Compactor) cut(ctx context.Context, st events.StreamState) (uint64, error) {
	p := c.cfg.Policy
	var cut uint64
	if p.MaxAge > 0 {
		first, err := events.FirstSeqSince(ctx, c.cfg.JS, c.cfg.Now().Add(-p.MaxAge))
		if err != nil {
			return 0, fmt.Errorf("retention: %w", err)
		}
		if first == 0 {
			first = st.LastSeq + 1 // everything is older
		}
		cut = first
	}
	if p.MaxBytes > 0 && st.Bytes > uint64(p.MaxBytes) && st.LastSeq >= st.FirstSeq {
		// Messages are about the same size: trim the share that is over.
		over := float64(st.Bytes-uint64(p.MaxBytes)) / float64(st.Bytes)
		span := float64(st.LastSeq - st.FirstSeq + 1)
		cut = max(cut, st.FirstSeq+uint64(math.Ceil(span*over)))
	}
	return cut, nil
}
