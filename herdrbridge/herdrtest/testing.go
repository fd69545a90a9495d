package herdrtest

import (
	"context"
	"os"
	"path/filepath"
)

// TB is the part of testing.TB Start uses. *testing.T and *testing.B
// satisfy it; the package does not import "testing", so a program that
// embeds the fake (fleetd demo, fleetd dev-herdr) does not link it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Start runs a Server for one test: it listens on herdr.sock in a fresh
// short temp directory (Unix socket paths are limited to ~108 bytes),
// validates every request it receives and every line it writes against
// herdr's schema — failing the test on any violation unless cfg.OnInvalid
// says otherwise — and closes the server, its panes and the directory when
// the test ends. cfg.SocketPath, if set, is used instead of the temp path.
func Start(tb TB, cfg Config) *Server {
	tb.Helper()
	if cfg.SocketPath == "" {
		dir, err := os.MkdirTemp("", "herdrtest-")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { os.RemoveAll(dir) })
		cfg.SocketPath = filepath.Join(dir, "herdr.sock")
	}
	if cfg.Validator == nil {
		tb.Fatal("herdrtest.Start: set Config.Validator to herdrschema.Schema(tb): tests check every herdr request and line against herdr's schema")
	}
	if cfg.OnInvalid == nil {
		cfg.OnInvalid = func(err error) { tb.Errorf("herdr protocol violation: %v", err) }
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
