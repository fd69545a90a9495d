package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
	if err := os.MkdirAll(filepath.Dir(c.Socket), 0o700); err != nil {
		return err
	}
	srv, err := herdrtest.New(herdrtest.Config{SocketPath: c.Socket, SeenOnCompletion: c.Seen})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Printf("herdr-protocol server (protocol 20) on %s\n", c.Socket)
	<-ctx.Done()
	return srv.Close()
}
