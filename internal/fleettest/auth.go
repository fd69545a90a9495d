package fleettest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
)

// StartAuth runs a NATS server on TCP under the config `fleetd auth`
// writes for fleet, with the FLEET stream, its client connected as the
// admin. dir holds the keys and the server config, for a test to connect
// as any identity of fleet.
func StartAuth(tb testing.TB, fleet natsauth.Fleet) (srv *natstest.Server, dir string) {
	tb.Helper()
	dir = tb.TempDir()
	creds, err := natsauth.Generate(fleet)
	if err != nil {
		tb.Fatalf("fleettest: %v", err)
	}
	if err := natsauth.Write(dir, creds); err != nil {
		tb.Fatalf("fleettest: %v", err)
	}
	admin, err := natsauth.ConnectOption(filepath.Join(dir, "admin.nk"))
	if err != nil {
		tb.Fatalf("fleettest: %v", err)
	}
	srv = natstest.Start(tb, natstest.WithTCP(), natstest.WithClientOptions(admin), natstest.WithConfig(func(c *embeddednats.Config) {
		c.ConfigFile = filepath.Join(dir, natsauth.ServerConfigFile)
	}))
	if _, err := events.EnsureStream(context.Background(), srv.JS, events.StreamOptions{}); err != nil {
		tb.Fatalf("fleettest: %v", err)
	}
	return srv, dir
}
