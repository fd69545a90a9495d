package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

// run parses args and runs the chosen command; tests call it directly.
func run(ctx context.Context, args []string) int { return runTo(ctx, args, os.Stderr) }

// runTo is run with a command's failure written to stderr: one line,
// errorLine's (kong's own usage errors stay as kong prints them).
func runTo(ctx context.Context, args []string, stderr io.Writer) int {
	if event, ok := plainHook(args); ok {
		return runHook(ctx, event)
	}
	var cli CLI
	parser, err := kong.New(&cli, cliOptions(ctx)...)
	if err != nil {
		fmt.Fprintln(stderr, "fleetd:", err)
		return 2
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		parser.Errorf("%s", err)
		return 2
	}
	if err := kctx.Run(&cli.Globals); err != nil {
		fmt.Fprintln(stderr, errorLine(kctx, &cli.Globals, err))
		return exitCode(err)
	}
	return 0
}

// plainHook recognises the exact form Claude Code's settings run,
// `fleetd hook <event>`, so it can skip building the whole CLI: the hook
// runs on every prompt and reply of every agent, and must also exit 0 when
// a FLEET_* variable or config file would fail the CLI's parse.
func plainHook(args []string) (string, bool) {
	if len(args) != 2 || args[0] != "hook" || strings.HasPrefix(args[1], "-") || strings.EqualFold(args[1], "replay") {
		return "", false
	}
	return args[1], true
}

// runHook is HookCmd.Run with its defaults; it always exits 0.
func runHook(ctx context.Context, event string) int {
	cmd := HookCmd{Event: event, Timeout: 2 * time.Second}
	// Same defaults as the CLI's flags (kong is skipped here).
	_ = cmd.Run(ctx, &Globals{})
	return 0
}
