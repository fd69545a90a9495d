package natsauth

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnectTimeout bounds a client's connection attempt: a command should
// say promptly that no fleetd is there rather than hang.
const ConnectTimeout = 3 * time.Second

// ErrNoServer means a client reached no NATS server at its URL, or none
// that took it: no fleetd runs there, or the URL or identity is wrong.
var ErrNoServer = errors.New("connect to fleetd's NATS")

// Connect connects a fleetd client — a command beside the gateways, not a
// gateway — to the fabric at url (default nats.DefaultURL) as creds or
// token (ClientOptions), named name for the server's monitoring, and
// returns JetStream over the connection. extra are the caller's own
// options (an error handler, say).
func Connect(url, name, creds, token string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	if url == "" {
		url = nats.DefaultURL
	}
	auth, err := ClientOptions(creds, token)
	if err != nil {
		return nil, nil, err
	}
	opts := append(append([]nats.Option{nats.Name(name), nats.Timeout(ConnectTimeout)}, auth...), extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w at %s: %w", ErrNoServer, url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
