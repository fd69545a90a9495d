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
	srv := natstest.Start(t, natstest.WithConfig(func(c *embeddednats.Config) { c.MaxStore = limit }))
	ctx := context.Background()
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
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
