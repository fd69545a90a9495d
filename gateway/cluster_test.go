package gateway

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream that a create is making and a lookup does not find yet is a
// cluster still forming: provisioning waits it out (it stopped a gateway
// whose peers were electing their first leader). A lookup's "not found"
// outside a create is an answer, not a wait.
func TestAStreamNotFoundWhileBeingCreatedIsWaitedOut(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	// What the server answered in that gateway's log.
	notFound := &jetstream.APIError{Code: 404, ErrorCode: jetstream.JSErrCodeStreamNotFound, Description: "stream not found"}

	calls := 0
	err := retryForming(ctx, log, nil, "bucket fleet_sessions", func(context.Context) error {
		if calls++; calls < 3 {
			return whileCreating(notFound)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("create: %v after %d calls; want it retried until it works (3 calls)", err, calls)
	}

	calls = 0
	err = retryForming(ctx, log, nil, "look up KV_fleet_sessions", func(context.Context) error {
		calls++
		return notFound
	})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || calls != 1 {
		t.Errorf("lookup: %v after %d calls; want stream not found at once", err, calls)
	}
	if err := whileCreating(errors.New("disk full")); clusterForming(err) {
		t.Errorf("%v: another failure of a create is not a forming cluster", err)
	}
}
