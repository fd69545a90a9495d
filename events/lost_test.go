package events_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// within fails the test unless fn returns within d.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

func newLog(t *testing.T, opts ...natstest.Option) (*natstest.Server, events.Log) {
	t.Helper()
	return fleettest.StartLog(t, events.Options{Source: "fleetd/test/events"}, opts...)
}

// followLog is newLog with a follower of the whole log.
func followLog(t *testing.T) (*natstest.Server, events.Log, *events.Follower) {
	t.Helper()
	srv, log := newLog(t)
	f, err := log.Follow(context.Background(), events.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, log, f
}

func hostUp(host string) events.Event {
	return events.Event{Subject: host, Data: events.HostUp{Host: host}}
}

// A deleted stream ends a follower with ErrStreamLost, by itself and at
// once, and Stop returns at once: before, jetstream's ordered consumer
// retried the lost consumer forever and Stop (so SIGTERM) hung.
func TestFollowerEndsWithErrStreamLostWhenTheStreamIsDeleted(t *testing.T) {
	srv, log, f := followLog(t)
	ctx := context.Background()
	if _, err := log.Append(ctx, hostUp("h")); err != nil {
		t.Fatal(err)
	}
	<-f.Events()
	if err := srv.JS.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not end after its stream was deleted")
	}
	if err := f.Err(); !errors.Is(err, events.ErrStreamLost) {
		t.Fatalf("follower error %v, want ErrStreamLost", err)
	}
	within(t, time.Second, "Stop", f.Stop)

	// A publish nobody answers is ambiguous (a cluster answers so for a
	// moment after creating a stream): it fails, but only the API says
	// the stream is lost.
	if _, err := log.Append(ctx, hostUp("h")); err == nil {
		t.Error("append without a stream succeeded")
	}
	if _, err := log.State(ctx); !errors.Is(err, events.ErrStreamLost) {
		t.Errorf("state without a stream: %v, want ErrStreamLost", err)
	}
	if _, err := log.Follow(ctx, events.Query{}); !errors.Is(err, events.ErrStreamLost) {
		t.Errorf("follow without a stream: %v, want ErrStreamLost", err)
	}
	for _, err := range log.Read(ctx, events.Query{}) {
		if !errors.Is(err, events.ErrStreamLost) {
			t.Errorf("read without a stream: %v, want ErrStreamLost", err)
		}
	}
}

// Stop returns promptly while the follower's server is gone and its
// connection reconnects: nothing inside waits without its context.
func TestFollowerStopIsPromptWhileTheServerIsGone(t *testing.T) {
	srv, _, f := followLog(t)
	srv.Close()
	within(t, 3*time.Second, "Stop", f.Stop)
}

// A recreated stream is a new incarnation: State tells it apart even when
// its sequences restarted.
func TestStateTellsARecreatedStreamApart(t *testing.T) {
	srv, log := newLog(t)
	ctx := context.Background()
	for range 3 {
		if _, err := log.Append(ctx, hostUp("h")); err != nil {
			t.Fatal(err)
		}
	}
	before, err := log.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.FirstSeq != 1 || before.LastSeq != 3 || before.Created.IsZero() {
		t.Fatalf("state %+v", before)
	}
	if err := srv.JS.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := log.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Created.Equal(before.Created) || after.LastSeq != 0 {
		t.Fatalf("recreated stream %+v looks like %+v", after, before)
	}
}

// A store at its limit refuses appends with ErrStoreFull, and OnAppend
// hears every outcome.
func TestAppendToAFullStoreFailsWithErrStoreFull(t *testing.T) {
	srv := natstest.Start(t, natstest.WithConfig(func(c *embeddednats.Config) { c.MaxStore = 256 << 10 }))
	ctx := context.Background()
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	var oks, fails int
	log := events.New(srv.JS, events.Options{OnAppend: func(err error) {
		if err == nil {
			oks++
		} else if errors.Is(err, events.ErrStoreFull) {
			fails++
		}
	}})
	text := strings.Repeat("x", 16<<10)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = log.Append(ctx, events.Event{Subject: "a", Data: events.AgentQueued{Text: text}})
	}
	if !errors.Is(err, events.ErrStoreFull) {
		t.Fatalf("append to a full store: %v, want ErrStoreFull", err)
	}
	if _, err := log.AppendBatch(ctx, []events.Event{hostUp("h"), hostUp("h")}); !errors.Is(err, events.ErrStoreFull) {
		t.Errorf("batch to a full store: %v, want ErrStoreFull", err)
	}
	if oks == 0 || fails != 2 {
		t.Errorf("OnAppend heard %d successes and %d full-store failures, want some and 2", oks, fails)
	}
}

// A follower whose stream is deleted and created again at once never
// carries on in the new stream (whose sequences restarted, so its old
// position means nothing there): it ends with ErrStreamLost.
func TestFollowerEndsWhenItsStreamIsCreatedAgain(t *testing.T) {
	srv, log, f := followLog(t)
	ctx := context.Background()
	defer f.Stop()
	for range 3 {
		if _, err := log.Append(ctx, hostUp("h")); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		<-f.Events()
	}
	if err := srv.JS.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := log.Append(ctx, hostUp("h2")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ev, ok := <-f.Events():
		if ok {
			t.Fatalf("the follower carried on in the new stream: %+v", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the follower did not end")
	}
	if err := f.Err(); !errors.Is(err, events.ErrStreamLost) {
		t.Fatalf("follower error %v, want ErrStreamLost", err)
	}
}
