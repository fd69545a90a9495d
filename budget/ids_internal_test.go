package budget

import (
	"testing"
	"time"
)

// A budget warning's id is part of the log: hosts of two versions must
// derive the same one, or a warning would be stored twice. This is the id
// every version so far derived; within the minute it does not change.
func TestAWarningsIDIsTheOneEarlierVersionsWrote(t *testing.T) {
	at := time.Date(2026, 12, 1, 7, 0, 31, 0, time.UTC)
	want := "01M8R6EDC04R7KB8AYMZZEHSB4"
	if got := warningID("fleet.agent.w-1.budget", "daily", 80, 42, at); got != want {
		t.Errorf("warningID = %s, want %s", got, want)
	}
	if got := warningID("fleet.agent.w-1.budget", "daily", 80, 42, at.Add(20*time.Second)); got != want {
		t.Errorf("a host 20 s later in the same minute derived %s, want %s", got, want)
	}
}
