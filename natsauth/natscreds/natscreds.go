package natscreds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/fleetd/fleetd/events/eventcore"
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
	case strings.HasPrefix(name, GatewayPrefix) && eventcore.ValidToken(strings.TrimPrefix(name, GatewayPrefix)) == nil:
		return name
	case strings.HasPrefix(name, AgentPrefix) && eventcore.ValidAgentID(strings.TrimPrefix(name, AgentPrefix)) == nil:
		return name
	}
	return ""
}

// Key is a credentials file read for a client that answers the server's
// nonce itself (internal/natslite): an nkey seed file (from
// natsauth.Write) or a JWT .creds file.
type Key struct {
	// JWT is a .creds file's user JWT; "" for an nkey seed file.
	JWT string
	// PublicKey is the seed's public key (a U… nkey).
	PublicKey string
	// InboxPrefix is the identity's inbox prefix for a gateway's or an
	// agent's key from Write, else "" (the default inbox).
	InboxPrefix string
	// Sign signs the server's nonce with the seed.
	Sign func(nonce []byte) ([]byte, error)
}

// Load reads the credentials file at path as nats.go's
// NkeyOptionFromSeed or UserCredentials would (natsauth.ConnectOption):
// a file whose content starts with SU is a seed file, anything else a
// .creds file with a JWT and a seed.
func Load(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("credentials: %w", err)
	}
	var k Key
	if !IsSeedFile(b) {
		if k.JWT, err = nkeys.ParseDecoratedJWT(b); err != nil {
			return Key{}, fmt.Errorf("credentials %s: %w", path, err)
		}
	} else {
		k.InboxPrefix = InboxPrefix(IdentityName(path))
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return Key{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	if k.PublicKey, err = kp.PublicKey(); err != nil {
		return Key{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	k.Sign = kp.Sign
	return k, nil
}

// IsSeedFile reports whether a credentials file's content is an nkey seed
// (natsauth.Write's key files), not a JWT .creds file.
func IsSeedFile(content []byte) bool {
	return strings.HasPrefix(strings.TrimSpace(string(content)), "SU")
}
