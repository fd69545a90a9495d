package checkfor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/checkfor"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := checkfor.Poll(time.Second, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollReturnsTheLastErrorWhenTimeRunsOut(t *testing.T) {
	last := errors.New("still not")
	err := checkfor.Poll(20*time.Millisecond, time.Millisecond, func() error { return last })
	if !errors.Is(err, last) || !strings.Contains(err.Error(), "after 20ms") {
		t.Fatalf("Poll = %v, want the last error, saying how long it waited", err)
	}
}
