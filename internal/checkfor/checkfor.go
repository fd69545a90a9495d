package checkfor

import (
	"fmt"
	"testing"
	"time"
)

// Eventually calls fn every step until it returns nil, and fails the test
// with fn's last error once total has passed.
func Eventually(tb testing.TB, total, step time.Duration, fn func() error) {
	tb.Helper()
	if err := Poll(total, step, fn); err != nil {
		tb.Fatal(err)
	}
}

// Poll calls fn every step until it returns nil, and returns fn's last
// error, saying how long it waited, once total has passed. It is
// Eventually for a test that does more than fail when the wait runs out:
// explains the failure with what is costly to gather, or cleans up.
func Poll(total, step time.Duration, fn func() error) error {
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", total, err)
		}
		time.Sleep(step)
	}
}
