package events

import (
	"context"
	"encoding/json"
	"errors"
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
	// MaxConsumers caps the consumers on FLEET. Default
	// DefaultMaxConsumers.
	MaxConsumers int
}

// DefaultMaxConsumers is FLEET's consumer limit, set explicitly rather
// than left to nats-server's default of 1,000 per stream. Every consumer
// counts against it, the ephemeral ordered ones fleetd's readers use too
// (nats-server exempts only a mirror's or a source's): each /events
// stream, each fold of the projections, the bridge, the nudger, each job
// and time-travel read holds one while it reads (and its 30 s inactivity
// threshold after). The durables are few and bounded: a router's per role,
// inbox-notify, and one per inbox, which package inbox caps well below
// this (inbox.DefaultMaxInboxes) — so however many inboxes are opened,
// the readers of every host keep thousands of slots. A server or account
// with a lower limit of its own keeps it (see EnsureStream).
const DefaultMaxConsumers = 8192

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
	if o.MaxConsumers == 0 {
		o.MaxConsumers = DefaultMaxConsumers
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
		MaxConsumers:       o.MaxConsumers,
	}
}

// EnsureStream creates the FLEET stream or updates it to cfg: a stream
// made by an older fleetd gets its consumer limit as fleetd starts. An
// account whose JetStream limits allow fewer consumers than MaxConsumers
// refuses that limit; the stream is then ensured without one of its own,
// and the account's applies.
func EnsureStream(ctx context.Context, js jetstream.JetStream, o StreamOptions) (jetstream.Stream, error) {
	ctx, cancel := withDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg := StreamConfig(o)
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeMaximumConsumersLimit {
		cfg.MaxConsumers = -1
		s, err = js.CreateOrUpdateStream(ctx, cfg)
	}
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
