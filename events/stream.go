package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamOptions are the knobs of the FLEET stream that vary by deployment.
type StreamOptions struct {
	// Replicas is 1 standalone and 3 in a cluster of three or more.
	Replicas int
	// Duplicates is how long an event id is remembered for dedupe; a
	// retried append within it is a no-op. Default DefaultDuplicates.
	Duplicates time.Duration
	// Storage defaults to file storage; memory is only for benchmarks.
	Storage jetstream.StorageType
}

// DefaultDuplicates is the FLEET stream's dedupe window. A server that
// starts reloads the id of every event stored within it.
const DefaultDuplicates = 2 * time.Minute

// StreamConfig is the FLEET stream: every fleet.> subject, limits retention
// (the log is never trimmed by consumption), file storage, a dedupe window,
// direct get for fast point reads, and atomic batches for AppendBatch.
func StreamConfig(o StreamOptions) jetstream.StreamConfig {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Duplicates == 0 {
		o.Duplicates = DefaultDuplicates
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

// Trim removes from FLEET the messages on subject (a wildcard is allowed)
// whose sequence is below seq, and returns how many went. It is the one
// way fleetd changes the log other than appending: retention (see package
// retention) uses it for what no reader needs any more.
func Trim(ctx context.Context, js jetstream.JetStream, subject string, seq uint64) (uint64, error) {
	if seq <= 1 {
		return 0, nil
	}
	ctx, cancel := withDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	// The purge API itself, for the count it answers with.
	req, _ := json.Marshal(map[string]any{"filter": subject, "seq": seq})
	resp, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+Stream, req)
	if err != nil {
		return 0, fmt.Errorf("trim %s below %d: %w", subject, seq, err)
	}
	var r struct {
		Success bool                `json:"success"`
		Purged  uint64              `json:"purged"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return 0, fmt.Errorf("trim %s below %d: %w", subject, seq, err)
	}
	if r.Error != nil {
		return 0, fmt.Errorf("trim %s below %d: %w", subject, seq, translate(r.Error))
	}
	return r.Purged, nil
}

// SubjectCounts is how many messages FLEET holds on each subject matching
// filter.
func SubjectCounts(ctx context.Context, js jetstream.JetStream, filter string) (map[string]uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, Stream)
	if err != nil {
		return nil, fmt.Errorf("subjects %s: %w", filter, translate(err))
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("subjects %s: %w", filter, translate(err))
	}
	return info.State.Subjects, nil
}

// FirstSeqSince is the sequence of FLEET's first message stored at or
// after t, or 0 when there is none.
func FirstSeqSince(ctx context.Context, js jetstream.JetStream, t time.Time) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx, 10*time.Second)
	defer cancel()
	return leaderGet(ctx, js, map[string]any{"next_by_subj": SubjectAll, "start_time": t.UTC()})
}

// LastSeqOn is the sequence of the last message on subject, or 0.
func LastSeqOn(ctx context.Context, js jetstream.JetStream, subject string) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx, 10*time.Second)
	defer cancel()
	return leaderGet(ctx, js, map[string]any{"last_by_subj": subject})
}
