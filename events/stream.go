package events

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamOptions are the knobs of the FLEET stream that vary by deployment.
type StreamOptions struct {
	// Replicas is 1 standalone and 3 in a cluster of three or more.
	Replicas int
	// Duplicates is how long an event id is remembered for dedupe; a
	// retried append within it is a no-op. Default 2 minutes.
	Duplicates time.Duration
	// Storage defaults to file storage; memory is only for benchmarks.
	Storage jetstream.StorageType
}

// StreamConfig is the FLEET stream: every fleet.> subject, limits retention
// (the log is never trimmed by consumption), file storage, a dedupe window,
// direct get for fast point reads, and atomic batches for AppendBatch.
func StreamConfig(o StreamOptions) jetstream.StreamConfig {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Duplicates == 0 {
		o.Duplicates = 2 * time.Minute
	}
	return jetstream.StreamConfig{
		Name:               Stream,
		Description:        "fleetd event log: every send, status change and reply",
		Subjects:           []string{SubjectAll},
		Retention:          jetstream.LimitsPolicy,
		Storage:            o.Storage,
		Replicas:           o.Replicas,
		Duplicates:         o.Duplicates,
		AllowDirect:        true,
		AllowAtomicPublish: true,
		Discard:            jetstream.DiscardOld,
	}
}

// EnsureStream creates the FLEET stream or updates it to cfg.
func EnsureStream(ctx context.Context, js jetstream.JetStream, o StreamOptions) (jetstream.Stream, error) {
	ctx, cancel := withDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := js.CreateOrUpdateStream(ctx, StreamConfig(o))
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", Stream, err)
	}
	return s, nil
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
