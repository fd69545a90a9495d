package events_test

import (
	"context"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
)

func TestJetStreamLog(t *testing.T) {
	eventstest.TestLog(t, func(t *testing.T) eventstest.Harness {
		srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/events"})
		return eventstest.Harness{
			Log: log,
			PublishRaw: func(subj string, data []byte) error {
				_, err := srv.JS.Publish(context.Background(), subj, data)
				return err
			},
		}
	})
}
