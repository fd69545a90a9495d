package events_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// A read that decodes on other goroutines (Query.Decoders) yields what a
// plain read does, in the same order: the events, the placeholders for
// junk with Skips, each junk message reported once and in the log's
// order, and no further than ToSeq. One that is broken off early returns
// with its consumer gone.
func TestAReadWithDecodersYieldsWhatAPlainReadDoes(t *testing.T) {
	var mu sync.Mutex
	var reported []uint64
	srv, log := fleettest.StartLog(t, events.Options{OnSkip: func(_ string, seq uint64, _ error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, seq)
	}})
	ctx := context.Background()
	// More than a few decode batches, with junk in several of them and
	// as the very last message.
	const n = 1000
	var junk []uint64
	for i := range n {
		if i%97 == 0 || i == n-1 {
			pa, err := srv.JS.Publish(ctx, "fleet.agent.w1.status", []byte(`{"not":"an event"}`))
			if err != nil {
				t.Fatal(err)
			}
			junk = append(junk, pa.Sequence)
			continue
		}
		if _, err := log.Append(ctx, events.Event{Subject: fmt.Sprintf("w%d", i%7), Data: events.AgentQueued{From: "lead", Text: fmt.Sprint("task ", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []events.Query{{Skips: true}, {}, {Skips: true, FromSeq: 200, ToSeq: 700}, {Subjects: []string{"fleet.agent.w3.>"}}} {
		want := eventstest.ReadAll(t, log, q)
		q.Decoders = 3
		if got := eventstest.ReadAll(t, log, q); !reflect.DeepEqual(got, want) {
			t.Errorf("query %+v: %d events with decoders, %d without; want the same", q, len(got), len(want))
		}
	}
	mu.Lock()
	if !reflect.DeepEqual(reported, junk) {
		t.Errorf("the plain reads reported junk at %v, want %v", reported, junk)
	}
	reported = nil
	mu.Unlock()

	// Junk met first by a read with decoders is reported in the log's
	// order, once.
	fresh := fleettest.LogOn(t, srv, events.Options{OnSkip: func(_ string, seq uint64, _ error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, seq)
	}})
	eventstest.ReadAll(t, fresh, events.Query{Decoders: 2, Skips: true})
	eventstest.ReadAll(t, fresh, events.Query{Decoders: 2})
	mu.Lock()
	if !reflect.DeepEqual(reported, junk) {
		t.Errorf("reads with decoders reported junk at %v, want %v", reported, junk)
	}
	mu.Unlock()

	// Broken off after a few events: the read returns, and its consumer
	// is gone.
	read := 0
	for _, err := range log.Read(ctx, events.Query{Decoders: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if read++; read == 300 {
			break
		}
	}
	st, err := srv.JS.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().State.Consumers; c != 0 {
		t.Errorf("%d consumers after the reads, want 0", c)
	}
}

// A read with decoders whose context ends yields the error, as a plain
// read does, not a quiet end.
func TestAReadWithDecodersEndsWithItsContextsError(t *testing.T) {
	_, log := fleettest.StartLog(t, events.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Far more than the read pulls and decodes ahead of its caller.
	const n = 20_000
	evs := make([]events.Event, n)
	for i := range evs {
		evs[i] = events.Event{Subject: "w1", Data: events.AgentQueued{From: "lead", Text: fmt.Sprint(i)}}
	}
	if _, err := log.AppendMany(ctx, evs); err != nil {
		t.Fatal(err)
	}
	read, failed := 0, false
	for _, err := range log.Read(ctx, events.Query{Decoders: 2}) {
		if err != nil {
			failed = true
			break
		}
		if read++; read == 10 {
			cancel()
		}
	}
	if !failed {
		t.Errorf("read %d of %d events and ended without an error after its context ended", read, n)
	}
}
