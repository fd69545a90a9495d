package herdrbridge

import (
	"errors"
	"testing"
)

// The hook resolves no DNS (internal/sockdial): a NATS named by DNS is
// handed to it resolved, every address of every name, credentials and
// ports kept; addresses and localhost need nothing.
func TestHookNATSURLResolvesNames(t *testing.T) {
	lookup := func(host string) ([]string, error) {
		switch host {
		case "nats.internal":
			return []string{"10.0.0.7", "fd00::7"}, nil
		case "other":
			return []string{"10.0.0.8"}, nil
		}
		return nil, errors.New("no such host")
	}
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                   "",
		"nats://localhost:4222,nats://[::1]:4223": "",
		"nats://u:p@nats.internal:4300":           "nats://u:p@10.0.0.7:4300,nats://u:p@[fd00::7]:4300",
		"nats.internal, nats://127.0.0.1:5":       "nats://10.0.0.7:4222,nats://[fd00::7]:4222,nats://127.0.0.1:5",
		"nats://other:1,nats://unknown.example:2": "nats://10.0.0.8:1,nats://unknown.example:2",
		"nats://unknown.example:2":                "",
	} {
		if got := hookNATSURL(in, lookup); got != want {
			t.Errorf("hookNATSURL(%q) = %q, want %q", in, got, want)
		}
	}
}
