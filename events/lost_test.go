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
	"github.com/fleetd/fleetd/internal/checkfor"
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

// smallStore is a server whose JetStream store holds limit bytes, with the
// FLEET stream created.
func smallStore(t *testing.T, limit int64) *natstest.Server {
	t.Helper()
	srv := natstest.Start(t, natstest.WithConfig(func(c *embeddednats.Config) { c.MaxStore = limit }))
	if _, err := events.EnsureStream(context.Background(), srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	return srv
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
	srv := smallStore(t, 256<<10)
	ctx := context.Background()
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

// The Watcher reports the same troubles (a lost stream, a full store) as
// Health, for the rest of fleetd to act on.

func runWatcher(t *testing.T, cfg events.WatcherConfig) *events.Watcher {
	t.Helper()
	w, err := events.NewWatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "watcher", w.Run)
	return w
}

func wantCode(w *events.Watcher, code string) func() error {
	return func() error {
		if h := w.Health(); h.Code != code {
			return errors.New("health " + h.Code + ": " + h.Reason + ", want " + code)
		}
		return nil
	}
}

// A deleted stream is reported with the reason, and the watcher sees it
// back when an administrator creates it again (it never does it itself
// without RecreateAfter).
func TestWatcherReportsALostStreamUntilItIsCreatedAgain(t *testing.T) {
	srv, _ := newLog(t)
	ctx := context.Background()
	w := runWatcher(t, events.WatcherConfig{JS: srv.JS, Interval: 50 * time.Millisecond})
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, wantCode(w, events.HealthOK))
	if err := srv.JS.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, wantCode(w, events.HealthStreamLost))
	h := w.Health()
	if !errors.Is(h.Err(), events.ErrStreamLost) || !strings.Contains(h.Reason, "FLEET stream is missing") || !strings.Contains(h.Reason, "administrator") {
		t.Errorf("health %+v: want ErrStreamLost saying the stream is missing and who recreates it", h)
	}
	// Not recreated by the watcher.
	time.Sleep(200 * time.Millisecond)
	if _, err := srv.JS.Stream(ctx, events.Stream); err == nil {
		t.Fatal("the watcher created the stream without RecreateAfter")
	}
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, wantCode(w, events.HealthOK))
}

// With RecreateAfter, the watcher creates a missing stream again itself.
func TestWatcherRecreatesALostStreamWhenAllowed(t *testing.T) {
	srv, log := newLog(t)
	ctx := context.Background()
	before, err := log.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := runWatcher(t, events.WatcherConfig{JS: srv.JS, Interval: 50 * time.Millisecond, RecreateAfter: 200 * time.Millisecond})
	if err := srv.JS.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, wantCode(w, events.HealthStreamLost))
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, wantCode(w, events.HealthOK))
	after, err := log.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Created.Equal(before.Created) {
		t.Fatal("the stream was not created again")
	}
}

// A store near its limit is HealthStoreLow (new work refused, writes
// still succeed), then full; freeing space makes it healthy again.
func TestWatcherReportsAFullStoreUntilSpaceIsFreed(t *testing.T) {
	const limit = 512 << 10
	srv := smallStore(t, limit)
	ctx := context.Background()
	w := runWatcher(t, events.WatcherConfig{JS: srv.JS, Interval: 50 * time.Millisecond, MaxStore: limit, Reserve: 0.25})
	log := events.New(srv.JS, events.Options{OnAppend: w.Observe})
	text := strings.Repeat("x", 16<<10)
	sawLow := false
	var err error
	for i := 0; i < 200 && err == nil; i++ {
		_, err = log.Append(ctx, events.Event{Subject: "a", Data: events.AgentQueued{Text: text}})
		if w.Check(ctx).Code == events.HealthStoreLow {
			sawLow = true
		}
	}
	if !errors.Is(err, events.ErrStoreFull) || !sawLow {
		t.Fatalf("filling the store: %v (saw store_low: %v)", err, sawLow)
	}
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, wantCode(w, events.HealthStoreFull))
	if h := w.Health(); !strings.Contains(h.Reason, "full") || h.StoreMax != limit || !errors.Is(h.Err(), events.ErrStoreFull) {
		t.Errorf("health %+v", h)
	}
	if _, err := events.Trim(ctx, srv.JS, events.SubjectAll, 1_000_000); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		// A write succeeds again and says so.
		if _, err := log.Append(ctx, hostUp("h")); err != nil {
			return err
		}
		return wantCode(w, events.HealthOK)()
	})
}

// A follower whose consumer is deleted under it makes the consumer again
// and reads on from where it was, and says so through OnResume: nothing
// read twice, nothing missed.
func TestAFollowerWhoseConsumerIsDeletedReadsOnAndSaysSo(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan error, 10)
	log := events.New(srv.JS, events.Options{Source: "fleetd/test/events", OnResume: func(filters []string, cause error) {
		resumed <- cause
	}})
	f, err := log.Follow(ctx, events.Query{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	next := func() events.Event {
		t.Helper()
		select {
		case ev := <-f.Events():
			return ev
		case <-time.After(30 * time.Second):
			t.Fatalf("no event; follower error %v", f.Err())
			return events.Event{}
		}
	}
	if _, err := log.Append(ctx, hostUp("h1")); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Subject != "h1" {
		t.Fatalf("first event %+v", ev)
	}
	st, err := srv.JS.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for name := range st.ConsumerNames(ctx).Name() {
		if err := st.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted == 0 {
		t.Fatal("no consumer to delete")
	}
	if _, err := log.Append(ctx, hostUp("h2")); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Subject != "h2" || ev.Seq != 2 {
		t.Fatalf("after the consumer was deleted: %+v", ev)
	}
	select {
	case cause := <-resumed:
		if cause == nil {
			t.Fatal("OnResume without a cause")
		}
	default:
		t.Fatal("the follower made its consumer again without OnResume")
	}
}
