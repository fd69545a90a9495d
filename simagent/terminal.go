package simagent

import (
	"context"
	"fmt"
	"os"
)

// RunOnTerminal runs an agent on this process's terminal, as `fleetd
// sim-agent` in a herdr pane: stdin (in raw mode when it is a terminal,
// as Claude Code puts it) and stdout are its In and Out, and unless cfg
// names another fleetd (or NoHooks), this very executable fires the hooks.
// It returns when the agent does.
func RunOnTerminal(ctx context.Context, cfg Config) error {
	if cfg.Fleetd == "" && !cfg.NoHooks {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("sim-agent: find fleetd: %w", err)
		}
		cfg.Fleetd = exe
	}
	if restore, err := MakeRaw(int(os.Stdin.Fd())); err == nil {
		defer restore()
	}
	cfg.In, cfg.Out = os.Stdin, os.Stdout
	agent, err := New(cfg)
	if err != nil {
		return err
	}
	return agent.Run(ctx)
}
