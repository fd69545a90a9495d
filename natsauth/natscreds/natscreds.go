package natscreds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/events"
)

// Names of the identities natsauth mints, read back off a key file's name.
const (
	AdminName     = "admin"
	GatewayPrefix = "gateway-"
	AgentPrefix   = "agent-"
	// KeyExt ends the name of every key file natsauth writes.
	KeyExt = ".nk"
)

// InboxPrefix is the inbox prefix an identity's connections must use
// (nats.CustomInboxPrefix): "_INBOX_<name>", so each gateway and agent
// subscribes to replies meant for it alone. The admin keeps the default
// "_INBOX" (it may subscribe to anything).
func InboxPrefix(name string) string {
	if name == AdminName || name == "" {
		return ""
	}
	return "_INBOX_" + name
}

// IdentityName is the identity a key file from natsauth.Write belongs to,
// read off its name ("admin", "gateway-h1", "agent-w-1"), or "" for any
// other file.
func IdentityName(path string) string {
	base := filepath.Base(path)
	name, ok := strings.CutSuffix(base, KeyExt)
	if !ok {
		return ""
	}
	switch {
	case name == AdminName:
		return name
	case strings.HasPrefix(name, GatewayPrefix) && events.ValidToken(strings.TrimPrefix(name, GatewayPrefix)) == nil:
		return name
	case strings.HasPrefix(name, AgentPrefix) && events.ValidAgentID(strings.TrimPrefix(name, AgentPrefix)) == nil:
		return name
	}
	return ""
}

// ConnectOption returns the nats.Option for a credentials file: an nkey
// seed file (from natsauth.Write) or a JWT .creds file. For a gateway's
// or an agent's key from Write it also sets the identity's inbox prefix,
// the only inbox its permissions let it subscribe to.
func ConnectOption(path string) (nats.Option, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(b)), "SU") {
		return nats.UserCredentials(path), nil
	}
	seed, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	prefix := InboxPrefix(IdentityName(path))
	return func(o *nats.Options) error {
		if err := seed(o); err != nil {
			return err
		}
		if prefix == "" {
			return nil
		}
		return nats.CustomInboxPrefix(prefix)(o)
	}, nil
}
