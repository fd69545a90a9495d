package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
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

// While a stream has no leader (an election after a node died, or a
// stream still being made) JetStream answers an append with no one at
// all. The append waits that out within its timeout, as a lead's POST or
// a hook would want, instead of failing after nats.go's half second of
// retries.
func TestAnAppendWaitsForAStreamThatHasNoLeaderYet(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) {
			srv := natstest.Start(t)
			log := events.New(srv.JS, events.Options{Timeout: 20 * time.Second, CoalesceAppends: coalesce})
			made := make(chan error, 1)
			go func() {
				time.Sleep(1500 * time.Millisecond) // three times nats.go's own retries
				_, err := events.EnsureStream(context.Background(), srv.JS, events.StreamOptions{})
				made <- err
			}()
			ack, err := log.Append(context.Background(), events.Event{Subject: "w1", Data: events.AgentQueued{Text: "hi"}})
			if err := <-made; err != nil {
				t.Fatal(err)
			}
			if err != nil {
				t.Fatalf("append while the stream had no leader: %v", err)
			}
			if ack.Seq != 1 {
				t.Errorf("ack %+v, want seq 1", ack)
			}
		})
	}
}

// A stream that never comes still fails the append, at its timeout.
func TestAnAppendWithNoStreamFailsAtItsTimeout(t *testing.T) {
	srv := natstest.Start(t)
	log := events.New(srv.JS, events.Options{Timeout: 800 * time.Millisecond})
	_, err := log.Append(context.Background(), events.Event{Subject: "w1", Data: events.AgentQueued{Text: "hi"}})
	if err == nil {
		t.Fatal("an append with no stream succeeded")
	}
}
