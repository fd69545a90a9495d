package herdrtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Serve runs a server for cfg until ctx ends, as 'fleetd dev-herdr' does
// for machines without herdr: it creates the socket's directory, listens,
// says where on w, and closes the server when ctx is done.
func Serve(ctx context.Context, cfg Config, w io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(cfg.SocketPath), 0o700); err != nil {
		return err
	}
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "herdr-protocol server (protocol 20) on %s\n", cfg.SocketPath)
	<-ctx.Done()
	return srv.Close()
}
