package gateway

import "testing"

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
