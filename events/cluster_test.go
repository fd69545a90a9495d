package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
)

// The contract holds on a replicated stream too, where JetStream reports
// a lost expected-sequence race as 10164 instead of 10071.
func TestJetStreamLogClusteredR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped in -short")
	}
	eventstest.TestLog(t, func(t *testing.T) eventstest.Harness {
		// A fresh cluster per case: deleting and re-creating an R3 stream
		// of the same name races with the old incarnation's consumers.
		nodes := natstest.StartCluster(t, 3)
		js := nodes[0].JS
		ctx := context.Background()
		if _, err := events.EnsureStream(ctx, js, events.StreamOptions{Replicas: 3}); err != nil {
			t.Fatal(err)
		}
		natstest.WaitStreamLed(t, js, events.Stream)
		return eventstest.Harness{
			Log:        events.New(js, events.Options{Source: "fleetd/test/events"}),
			PublishRaw: func(subj string, data []byte) error { _, err := js.Publish(ctx, subj, data); return err },
		}
	})
}

func TestClusterKeepsWorkingWithOneNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped in -short")
	}
	nodes := natstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := events.EnsureStream(ctx, nodes[0].JS, events.StreamOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitStreamLed(t, nodes[0].JS, events.Stream)
	// Write through the third node, the one that will stay up longest,
	// and read through the second, so both paths cross the cluster.
	writer := events.New(nodes[2].JS, events.Options{Source: "fleetd/n3/test"})
	reader := events.New(nodes[1].JS, events.Options{})
	var ids []string
	appendN := func(n int) {
		for i := range n {
			ack, err := writer.Append(ctx, events.Event{Subject: "w1", Data: events.AgentQueued{Text: fmt.Sprint(len(ids), i)}})
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			ids = append(ids, ack.ID)
		}
	}
	appendN(20)

	nodes[0].Close()

	// The stream may need a moment to elect a new leader; appends retry
	// through that inside their timeout, and must all land.
	appendN(20)
	// Reads create a consumer, which needs the meta leader: if the node
	// that went down held it, the first reads may wait out an election.
	var got []events.Event
	start := time.Now()
	for attempt := 1; ; attempt++ {
		got = got[:0]
		var err error
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		for ev, e := range reader.Read(rctx, events.Query{}) {
			if e != nil {
				err = e
				break
			}
			got = append(got, ev)
		}
		rcancel()
		if err == nil {
			t.Logf("read after %d attempt(s), %v", attempt, time.Since(start))
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("reads still failing a minute after a node went down: %v", err)
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("read %d events after a node went down, want %d", len(got), len(ids))
	}
	for i, ev := range got {
		if ev.ID != ids[i] {
			t.Fatalf("event %d is %s, want %s", i, ev.ID, ids[i])
		}
	}
}
