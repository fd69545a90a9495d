package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/router"
)

// notFoundAtFirst is a JetStream whose first create of each stream,
// bucket and consumer, and first lookup of each stream, answer "stream
// not found", as a server that has not yet heard of a stream its meta
// leader just made does.
type notFoundAtFirst struct {
	jetstream.JetStream
	mu   sync.Mutex
	seen map[string]bool
}

// What the server answered in the gateway's log that stopped on it.
var streamNotFound = &jetstream.APIError{Code: 404, ErrorCode: jetstream.JSErrCodeStreamNotFound, Description: "stream not found"}

func (js *notFoundAtFirst) first(name string) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.seen[name] {
		return false
	}
	js.seen[name] = true
	return true
}

func (js *notFoundAtFirst) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if js.first("stream " + cfg.Name) {
		return nil, streamNotFound
	}
	return js.JetStream.CreateOrUpdateStream(ctx, cfg)
}

// Stream is the lookup provisioning makes after a bucket's create, to
// turn its atomic batches on.
func (js *notFoundAtFirst) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if js.first("lookup " + name) {
		return nil, streamNotFound
	}
	return js.JetStream.Stream(ctx, name)
}

func (js *notFoundAtFirst) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if js.first("kv " + cfg.Bucket) {
		return nil, streamNotFound
	}
	return js.JetStream.CreateOrUpdateKeyValue(ctx, cfg)
}

func (js *notFoundAtFirst) CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	if js.first("consumer " + cfg.Durable) {
		return nil, streamNotFound
	}
	return js.JetStream.CreateOrUpdateConsumer(ctx, stream, cfg)
}

// A stream that provisioning is creating, and that the server asked does
// not know of yet, is a cluster still forming: provisioning waits it out
// and provisions everything (it once stopped a gateway whose peers were
// electing their first leader). A lookup's "not found" outside a create
// is an answer, not a wait.
func TestProvisioningWaitsOutAStreamNotFoundWhileCreatingIt(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	js := &notFoundAtFirst{JetStream: srv.JS, seen: map[string]bool{}}
	p := Provisioner{JS: js, Log: slog.New(slog.DiscardHandler), Roles: []string{"w"}}
	if err := p.Run(ctx); err != nil {
		t.Fatalf("provisioning: %v", err)
	}
	for _, b := range projections.Buckets() {
		if _, err := srv.JS.KeyValue(ctx, b); err != nil {
			t.Errorf("bucket %s: %v", b, err)
		}
	}
	if _, err := srv.JS.Consumer(ctx, events.Stream, router.ConsumerName("w")); err != nil {
		t.Errorf("consumer of role w: %v", err)
	}

	calls := 0
	err := retryForming(ctx, p.Log, nil, "look up KV_fleet_sessions", func(context.Context) error {
		calls++
		return streamNotFound
	})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || calls != 1 {
		t.Errorf("lookup: %v after %d calls; want stream not found at once", err, calls)
	}
	if err := whileCreating(errors.New("disk full")); clusterForming(err) {
		t.Errorf("%v: another failure of a create is not a forming cluster", err)
	}
}
