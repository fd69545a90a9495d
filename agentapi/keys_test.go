package agentapi_test

import (
	"testing"

	"github.com/fleetd/fleetd/agentapi"
)

func TestKeyNamesAreHerdrs(t *testing.T) {
	for name, want := range map[string]string{"enter": "\r", "Esc": "\x1b", "left": "\x1b[D", "home": "\x1b[H", "delete": "\x1b[3~", "end": "\x1b[F", "ctrl+c": "\x03"} {
		got, err := agentapi.KeyBytes(name)
		if err != nil || got != want {
			t.Errorf("KeyBytes(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := agentapi.KeyBytes("hyper+q"); err == nil {
		t.Error("an unknown key name was accepted")
	}
}
