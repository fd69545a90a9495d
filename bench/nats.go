package bench

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
)

// NATS is an embedded server with the FLEET stream and the in-process
// connections a fleetd gateway runs on, without the gateway: one for the
// log and one for its projections' views.
type NATS struct {
	Server *embeddednats.Server
	NC     *nats.Conn
	JS     jetstream.JetStream
	Log    events.Log
	// ViewsNC and Views are the projections' own connection, as a
	// gateway gives them (gateway.Gateway's viewsJS).
	ViewsNC *nats.Conn
	Views   jetstream.JetStream
}

// StartNATS starts an embedded server storing in dir (an existing store is
// reused: a restart) with SyncAlways as given, and ensures the stream.
func StartNATS(ctx context.Context, dir string, syncAlways bool) (*NATS, error) {
	srv, err := embeddednats.New(embeddednats.Config{DataDir: dir, ServerName: "bench", SyncAlways: syncAlways})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	n := &NATS{Server: srv}
	if n.NC, err = srv.Connect(); err != nil {
		srv.Close()
		return nil, err
	}
	if n.JS, err = jetstream.New(n.NC); err != nil {
		n.Close()
		return nil, err
	}
	if n.ViewsNC, err = srv.Connect(); err != nil {
		n.Close()
		return nil, err
	}
	if n.Views, err = jetstream.New(n.ViewsNC); err != nil {
		n.Close()
		return nil, err
	}
	if _, err := events.EnsureStream(ctx, n.JS, events.StreamOptions{}); err != nil {
		n.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	n.Log = events.New(n.JS, events.Options{Source: "fleetd/bench/driver"})
	return n, nil
}

// Close stops the connections and the server.
func (n *NATS) Close() {
	for _, nc := range []*nats.Conn{n.ViewsNC, n.NC} {
		if nc != nil {
			nc.Close()
		}
	}
	n.Server.Close()
}
