// Command fleetd is the coordination fabric for fleets of AI coding agents
// in herdr panes: an event log on NATS JetStream, a gateway per host that
// types prompts into panes, Claude Code hooks that carry replies back, and a
// blocking HTTP shim for the lead. `fleetd --help` lists the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

// run parses args and runs the chosen command; tests call it directly.
func run(ctx context.Context, args []string) int {
	var cli CLI
	parser, err := kong.New(&cli, cliOptions(ctx)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetd:", err)
		return 2
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		parser.Errorf("%s", err)
		return 2
	}
	if err := kctx.Run(&cli.Globals); err != nil {
		fmt.Fprintln(os.Stderr, "fleetd:", err)
		return exitCode(err)
	}
	return 0
}
