package mcpserver

import (
	"context"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx, &mcp.StdioTransport{})
}
