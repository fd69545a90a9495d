package fakeapi

import "context"

// TB is the part of testing.TB the helpers below use. *testing.T and
// *testing.B satisfy it; the package does not import "testing", so a
// program that runs the fake (fleetd bench, fleetd demo) does not link it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Start starts a fake on a free 127.0.0.1 port for a test, with the default
// rules adjusted by opts, and closes it when the test ends.
func Start(tb TB, opts ...Option) *Server {
	tb.Helper()
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	s := New(cfg)
	if err := s.Start(context.Background()); err != nil {
		tb.Fatalf("start fake model API: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
