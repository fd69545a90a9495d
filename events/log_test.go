package events_test

import (
	"context"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
)

func TestJetStreamLog(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		name := "one publish an append"
		if coalesce {
			name = "appends in flight together coalesced"
		}
		t.Run(name, func(t *testing.T) {
			eventstest.TestLog(t, func(t *testing.T) eventstest.Harness {
				srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/events", CoalesceAppends: coalesce})
				return eventstest.Harness{
					Log: log,
					PublishRaw: func(subj string, data []byte) error {
						_, err := srv.JS.Publish(context.Background(), subj, data)
						return err
					},
				}
			})
		})
	}
}
