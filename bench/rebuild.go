package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// Fill appends about n events to the log: the fleet announced, then
// finished turns round-robin over its agents. It returns the last sequence.
func Fill(ctx context.Context, js jetstream.JetStream, f Fleet, n int) (uint64, error) {
	ann := f.Announce()
	last, err := Publish(ctx, js, ann)
	if err != nil {
		return 0, fmt.Errorf("fill: %w", err)
	}
	turns := max(0, n-len(ann)) / EventsPerSyntheticTurn
	if turns == 0 {
		return last, nil
	}
	return DriveTurns(ctx, js, f, 0, turns, events.NewULIDSource(time.Now))
}

// RawRead reads the whole stream through an ordered consumer, pulling as
// far ahead as a projection's catch-up does (projections.CatchUpPrefetch)
// but decoding nothing: the floor under a rebuild.
// It returns how long it took and how many messages it read.
func RawRead(ctx context.Context, js jetstream.JetStream) (time.Duration, int, error) {
	start := time.Now()
	st, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return 0, 0, fmt.Errorf("raw read: %w", err)
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.SubjectAll}})
	if err != nil {
		return 0, 0, fmt.Errorf("raw read: %w", err)
	}
	info := c.CachedInfo()
	if info == nil || info.NumPending == 0 {
		return time.Since(start), 0, nil
	}
	it, err := c.Messages(jetstream.PullMaxMessagesWithBytesLimit(projections.CatchUpPrefetch, projections.CatchUpPrefetchBytes(js.Conn().MaxPayload())))
	if err != nil {
		return 0, 0, fmt.Errorf("raw read: %w", err)
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return 0, n, fmt.Errorf("raw read: %w", err)
		}
		n++
		md, err := m.Metadata()
		if err != nil {
			return 0, n, fmt.Errorf("raw read: %w", err)
		}
		if md.NumPending == 0 {
			return time.Since(start), n, nil
		}
	}
}

// Rebuild drops and refolds the projection (in buckets prefixed bench_,
// beside any live ones) from the whole log, as a gateway's projection
// folds a log it has no checkpoint of, and returns how long it took and
// the sequence it reached. Like a gateway's, it reads the log on n.JS
// and writes its views on a connection of their own (n.Views), in atomic
// batches as large as the server takes when syncAlways says the server
// fsyncs every write.
func Rebuild(ctx context.Context, n *NATS, syncAlways bool) (time.Duration, uint64, error) {
	p := projections.New(n.Log, n.Views, projections.Options{BucketPrefix: "bench_", BatchWrites: syncAlways, MaxBatch: n.Server.MaxBatch()})
	defer p.Close()
	start := time.Now()
	if err := p.Rebuild(ctx); err != nil {
		return 0, 0, fmt.Errorf("rebuild: %w", err)
	}
	return time.Since(start), p.Applied(), nil
}
