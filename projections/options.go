package projections

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Options configure a Projector. The zero value is usable: every field has
// a default (setDefaults).
type Options struct {
	// Memory runs the fold in memory only: no bucket is created or
	// written and no checkpoint is taken, so any identity that may read
	// the log can run it beside the gateway's projection — a client such
	// as `fleetd orchestrate`, and tests. When New gets a JetStream and
	// the turns and checkpoints buckets are there and readable, the fold
	// starts from their checkpoint and reads back the final turns it no
	// longer holds; otherwise (a nil JetStream, no buckets, no rights) it
	// folds the log from its start. The fold itself is the same code in
	// both modes: same dedupe, staleness, session hand-over and Book.
	Memory bool
	// Replicas of the KV buckets: 1 standalone, 3 in a cluster of three or
	// more.
	Replicas int
	// Logger hears about retries and background failures.
	Logger *slog.Logger
	// Now is the clock for host liveness; default time.Now.
	Now func() time.Time
	// TurnCacheSize bounds the final turns kept in memory (an LRU); older
	// ones are read back from the turns bucket. Default 10,000; with
	// Memory, unbounded: a memory fold writes no turns bucket, so a turn
	// it evicted would be gone (it holds a client's lifetime of turns, not
	// a gateway's).
	TurnCacheSize int
	// HostTTL is how long a host may stay silent (no up or heartbeat)
	// before its agents are marked stale. Default 15s (3 heartbeats).
	HostTTL time.Duration
	// IdleTTL is how long a session may stay inactive: its IdleDeadline is
	// LastActive + IdleTTL. Default 30m.
	IdleTTL time.Duration
	// FlushInterval bounds how long a changed entry waits before it is
	// written to KV. Default 100ms.
	FlushInterval time.Duration
	// CheckpointEvery and CheckpointInterval: the checkpoint is written
	// after that many events or that much time, whichever comes first, and
	// when Run ends. Defaults 1,000 and 1s. While the fold catches up (a
	// rebuild, a start behind the log) they are 64 and 5 times that: each
	// checkpoint writes every agent's and session's row.
	CheckpointEvery    int
	CheckpointInterval time.Duration
	// SweepInterval is how often host liveness is checked against the
	// clock. Default 1s.
	SweepInterval time.Duration
	// BucketPrefix names the buckets: <prefix>roster, <prefix>sessions,
	// <prefix>turns and <prefix>checkpoints. Default "fleet_" (the
	// contract); other prefixes let a second projection live beside it.
	BucketPrefix string
	// Timeout bounds KV calls whose ctx has no deadline. Default 10s.
	Timeout time.Duration
	// BatchWrites writes a flush of many entries to a bucket (a rebuild,
	// a catch-up) as atomic batches. Set it when the server syncs every
	// write (SyncAlways): it syncs a batch once, where one-by-one puts
	// cost a sync each (about 30× slower). Without SyncAlways, plain
	// asynchronous puts are faster (a batch is staged server-side first).
	BatchWrites bool
	// MaxBatch is the most writes BatchWrites puts in one atomic batch:
	// the server's max_batch_size. Default 1,000, nats-server's default;
	// fleetd's embedded server takes embeddednats.MaxAtomicBatch. Each
	// batch is staged, synced and committed on its stream's goroutine, so
	// a catch-up's flush of thousands of turns waits for fewer when they
	// are larger. A batch refused as too large (a server of an older
	// fleetd, in a cluster) goes again in batches of 1,000.
	MaxBatch int
	// KeepStreams says this identity may not edit the buckets' streams
	// (a gateway key: the admin provisions them). BatchWrites then uses
	// batches where a bucket takes them already and never asks: asking is
	// a permission violation, and a gateway that came up while the admin
	// was still provisioning would be refused.
	KeepStreams bool
	// UpTo, with Memory, makes Rebuild fold the log only up to this
	// stream sequence (inclusive): the fleet as it was then, by the same
	// fold as live — the dashboard's time travel and `fleetd roster --at`
	// (events.Log.SeqAt turns a time into a sequence; set Now to that
	// time too, so host liveness is judged as of then). A log whose
	// beginning was trimmed is folded from what is left, since no
	// checkpoint describes the past. A fold that stops cannot follow: Run
	// refuses it.
	UpTo uint64
	// TurnTTL is how long a final turn stays in the turns bucket after its
	// last change (a per-key TTL): GET /message/{id} answers for it that
	// long. 0 keeps final turns for ever; open turns never expire.
	TurnTTL time.Duration
	// BulkGC is the garbage collector's target (GOGC, in percent) while a
	// catch-up folds a long stretch of the log (10,000 events or more: a
	// rebuild, a first start on a big log; see bulkGCAfter):
	// its garbage is short-lived, and at the default of 100 the collector
	// took a fifth of the fold's CPU. The process's setting comes back
	// when the last catch-up ends. Default 300; -1 leaves the collector
	// alone, as does GOGC set in the environment (the operator chose).
	BulkGC int
}

func (o *Options) setDefaults() {
	if o.BulkGC == 0 {
		o.BulkGC = 300
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.TurnCacheSize != 0:
	case o.Memory:
		o.TurnCacheSize = math.MaxInt
	default:
		o.TurnCacheSize = 10_000
	}
	if o.HostTTL == 0 {
		o.HostTTL = 15 * time.Second
	}
	if o.IdleTTL == 0 {
		o.IdleTTL = 30 * time.Minute
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.CheckpointEvery == 0 {
		o.CheckpointEvery = 1000
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = time.Second
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = time.Second
	}
	if o.BucketPrefix == "" {
		o.BucketPrefix = "fleet_"
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
}

// Validate reports every problem with the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.Replicas < 1 || o.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d: want 1..5", o.Replicas))
	}
	if o.TurnCacheSize < 1 {
		errs = append(errs, fmt.Errorf("turn cache size %d: want ≥ 1", o.TurnCacheSize))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"host ttl", o.HostTTL}, {"idle ttl", o.IdleTTL}, {"flush interval", o.FlushInterval},
		{"checkpoint interval", o.CheckpointInterval}, {"sweep interval", o.SweepInterval}, {"timeout", o.Timeout},
	} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v: must be positive", d.name, d.d))
		}
	}
	if o.TurnTTL < 0 || o.TurnTTL > 0 && o.TurnTTL < time.Second {
		errs = append(errs, fmt.Errorf("turn ttl %v: want 0 (keep) or at least 1s", o.TurnTTL))
	}
	if o.UpTo > 0 && !o.Memory {
		errs = append(errs, fmt.Errorf("up to #%d: only a memory fold stops at a point of the log", o.UpTo))
	}
	if o.BulkGC < -1 || o.BulkGC > 0 && o.BulkGC < 100 {
		errs = append(errs, fmt.Errorf("bulk gc %d%%: want -1 (leave the collector alone) or at least 100", o.BulkGC))
	}
	if o.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("max batch %d: want 0 (nats-server's default) or more", o.MaxBatch))
	}
	if o.CheckpointEvery < 1 {
		errs = append(errs, fmt.Errorf("checkpoint every %d events: want ≥ 1", o.CheckpointEvery))
	}
	if !bucketRE().MatchString(o.BucketPrefix + "x") {
		errs = append(errs, fmt.Errorf("bucket prefix %q: want letters, digits, - and _", o.BucketPrefix))
	}
	if len(errs) > 0 {
		return errors.Join(append([]error{ErrInvalidOptions}, errs...)...)
	}
	return nil
}
