package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"os"
)

// ServeStdio serves one client over this process's stdin and stdout — the
// transport Claude Code starts `fleetd mcp` with from .mcp.json — until it
// disconnects or ctx ends. stdout is the protocol, so the server logs to
// stderr, which Claude Code keeps as the server's log, and only warnings
// and errors unless cfg names a logger.
func ServeStdio(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return ServeIO(ctx, cfg, os.Stdin, os.Stdout)
}

// ServeIO serves one client over in and out, newline-delimited JSON-RPC,
// until in ends or ctx does. A line that is not a JSON-RPC message is
// answered with a JSON-RPC error (-32700 parse error, -32600 invalid
// request) and the session goes on: one bad line from a client must not
// take the fleet's tools away from it.
func ServeIO(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	t, filter := filteredTransport(in, out)
	// The filter ends with in, or when the SDK closes its pipe. A read of
	// a stdin that never ends cannot be interrupted, so it is not waited
	// for: the process exits around it (as the SDK's own stdio reader).
	go filter.run()
	return srv.Run(ctx, t)
}
