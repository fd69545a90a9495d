package main

import (
	"context"
	"os"

	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
)

// DevHerdrCmd runs fleetd's built-in herdr-protocol server (herdrtest) as a
// process: real PTY panes behind herdr's socket API, for machines without
// herdr, for the demo and for multi-process tests.
type DevHerdrCmd struct {
	Socket string `help:"Socket path to listen on." required:"" type:"path"`
	Seen   bool   `help:"Report finished agents as idle (seen) instead of done."`
}

// Run serves until interrupted.
func (c *DevHerdrCmd) Run(ctx context.Context) error {
	return herdrtest.Serve(ctx, herdrtest.Config{SocketPath: c.Socket, SeenOnCompletion: c.Seen}, os.Stdout)
}
