package gateway

import (
	"strings"
	"testing"
)

// The embedded server is named for the host as given, and requires the
// token the gateway's clients present, unless the config says otherwise.
func TestTheEmbeddedServerDefaultsToTheHostsNameAndToken(t *testing.T) {
	c := Config{Host: "Build.Box", NATSToken: "s3cret"}
	c.setDefaults()
	if c.NATS.ServerName != "Build.Box" || c.NATS.Token != "s3cret" || c.Host != HostToken("Build.Box") {
		t.Errorf("host %q, NATS %+v: want server Build.Box with token s3cret", c.Host, c.NATS)
	}
	c = Config{NATS: c.NATS, NATSToken: "other"}
	c.NATS.ServerName, c.NATS.Token = "named", "own"
	c.setDefaults()
	if c.NATS.ServerName != "named" || c.NATS.Token != "own" {
		t.Errorf("NATS %+v: a name and token given were replaced", c.NATS)
	}
}

// A negative duration is refused at the door, each of them, StartupGrace
// (`fleetd up --startup-grace`) among them.
func TestANegativeDurationIsRefused(t *testing.T) {
	for name, set := range map[string]func(*Config){
		"submit timeout": func(c *Config) { c.SubmitTimeout = -1 },
		"startup grace":  func(c *Config) { c.StartupGrace = -1 },
		"exit grace":     func(c *Config) { c.ExitGrace = -1 },
	} {
		c := Config{Host: "h"}
		c.NATS.DataDir = t.TempDir()
		set(&c)
		c.setDefaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%s -1: %v, want refused", name, err)
		}
	}
}
