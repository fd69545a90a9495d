package fakeapi

import (
	"context"
	"testing"
)

// Start starts a fake on a free 127.0.0.1 port for a test, with the default
// rules adjusted by opts, and closes it when the test ends.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	s := New(cfg)
	if err := s.Start(context.Background()); err != nil {
		tb.Fatalf("start fake Anthropic API: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
