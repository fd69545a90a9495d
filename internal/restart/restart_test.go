package restart_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/restart"
)

func TestLoopWarnsOncePerTroubleAndStopsWithCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	var warned []string
	var waits []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		restart.Loop(ctx, func(context.Context) error {
			calls++
			if calls == 2 {
				cancel()
			}
			return errors.New("stream lost")
		}, func(err error, wait time.Duration) {
			warned = append(warned, err.Error())
			waits = append(waits, wait)
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Loop did not return after ctx ended")
	}
	if got, want := calls, 2; got != want {
		t.Errorf("calls = %d, want %d", got, want)
	}
	if len(warned) != 1 || warned[0] != "stream lost" || waits[0] != time.Second {
		t.Errorf("warned %v with waits %v, want one warning of the stream lost before a wait of %v", warned, waits, time.Second)
	}
}

func TestLoopReturnsAtOnceOnAnEndedCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	restart.Loop(ctx, func(context.Context) error {
		t.Error("run called on an ended ctx")
		return nil
	}, func(error, time.Duration) { t.Error("warned on an ended ctx") })
}
