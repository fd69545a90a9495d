package events_test

import (
	"context"
	"testing"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
)

func TestJetStreamLog(t *testing.T) {
	eventstest.TestLog(t, func(t *testing.T) eventstest.Harness {
		srv := natstest.Start(t)
		if _, err := events.EnsureStream(context.Background(), srv.JS, events.StreamOptions{}); err != nil {
			t.Fatal(err)
		}
		return eventstest.Harness{
			Log: events.New(srv.JS, events.Options{Source: "fleetd/test/events"}),
			PublishRaw: func(subj string, data []byte) error {
				_, err := srv.JS.Publish(context.Background(), subj, data)
				return err
			},
		}
	})
}
