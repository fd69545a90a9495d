package herdrbridge

import (
	"testing"
	"time"
)

// A typed command is done on the sign its kind gives: /clear and /compact
// the session they start (for an agent with hooks), a /new the session it
// starts even when herdr caught a flash of work in between (Pi's /new did,
// now and then, and the turn hung until CommandTimeout), and any other
// command a moment of an empty box with no work seen.
func TestACommandIsDoneOnItsSign(t *testing.T) {
	for _, c := range []struct {
		name, command string
		f             inFlight
		since         time.Duration
		want          bool
	}{
		{"/clear before its session", "/clear", inFlight{hooked: true}, 5 * time.Second, false},
		{"/clear after a compaction's session", "/clear", inFlight{hooked: true, sessions: []string{"compact"}}, 5 * time.Second, false},
		{"/clear after its session", "/clear", inFlight{hooked: true, working: true, sessions: []string{"clear"}}, 0, true},
		{"/compact after its session", "/compact", inFlight{hooked: true, sessions: []string{"compact"}}, 0, true},
		{"/new after a work flash and its session", "/new", inFlight{hooked: true, working: true, sessions: []string{"clear"}}, 0, true},
		{"/new after a work flash, no session yet", "/new", inFlight{hooked: true, working: true}, 5 * time.Second, false},
		{"/new without hooks, no work seen", "/new", inFlight{}, time.Second, true},
		{"/new without hooks, a moment after", "/new", inFlight{}, 100 * time.Millisecond, false},
		{"/model after work seen", "/model", inFlight{hooked: true, working: true}, 5 * time.Second, false},
		{"/model, a quiet second", "/model", inFlight{hooked: true}, time.Second, true},
	} {
		if got := commandDone(c.command, c.f, c.since); got != c.want {
			t.Errorf("%s: commandDone %v, want %v", c.name, got, c.want)
		}
	}
}
