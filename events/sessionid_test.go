package events_test

import (
	"errors"
	"testing"

	"github.com/fleetd/fleetd/events"
)

func TestValidSessionIDIsAUUID(t *testing.T) {
	if err := events.ValidSessionID("0b5e1c2a-7d3f-4e8b-9a61-2c4d6e8f0a1b"); err != nil {
		t.Errorf("a UUID: %v", err)
	}
	for _, bad := range []string{"", "4f52aa", "x\x15touch /tmp/m #", "0b5e1c2a-7d3f-4e8b-9a61-2c4d6e8f0a1g", "0b5e1c2a 7d3f-4e8b-9a61-2c4d6e8f0a1b", "0b5e1c2a-7d3f-4e8b-9a61-2c4d6e8f0a1b\n"} {
		if err := events.ValidSessionID(bad); !errors.Is(err, events.ErrSessionID) {
			t.Errorf("ValidSessionID(%q) = %v, want ErrSessionID", bad, err)
		}
	}
}
