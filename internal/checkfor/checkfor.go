package checkfor

import (
	"testing"
	"time"
)

// Eventually calls fn every step until it returns nil, and fails the test
// with fn's last error once total has passed.
func Eventually(tb testing.TB, total, step time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %v", total, err)
		}
		time.Sleep(step)
	}
}
