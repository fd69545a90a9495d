package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/fleetd/fleetd/internal/clitable"
)

// StopCmd stops an agent for good through its host's shim (POST
// /agents/{id}/stop), as the dashboard's stop button does.
type StopCmd struct {
	Agent string `arg:"" help:"The agent to stop: its pane is closed, its turns by name fail, its role does not restart it."`
	From  string `default:"lead" help:"Who stops it, as the log records it."`
	JSON  bool   `name:"json" help:"Print the result as JSON."`

	out io.Writer
}

// Run stops the agent.
func (c *StopCmd) Run(ctx context.Context, g *Globals) error {
	out := outOr(c.out)
	res, err := newShimClient(g).Stop(ctx, c.Agent, c.From)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return clitable.JSON(out, res)
	}
	fmt.Fprintf(out, "%s: stopped by %s\n", res.Agent, res.By)
	return nil
}

// RestartCmd starts an agent afresh through its host's shim (POST
// /agents/{id}/restart), as the dashboard's restart button does.
type RestartCmd struct {
	Agent string `arg:"" help:"The agent to restart: its pane is closed and it starts again under the same id, resuming its session when its command can."`
	From  string `default:"lead" help:"Who restarts it, as the log records it."`
	JSON  bool   `name:"json" help:"Print its new registration as JSON."`

	out io.Writer
}

// Run restarts the agent and waits for its new session.
func (c *RestartCmd) Run(ctx context.Context, g *Globals) error {
	out := outOr(c.out)
	reg, err := newShimClient(g).Restart(ctx, c.Agent, c.From)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return clitable.JSON(out, reg)
	}
	fmt.Fprintf(out, "%s: restarted in pane %s on %s\n", reg.Agent, reg.Pane, reg.Host)
	return nil
}

// CancelCmd fails a turn still queued for an agent, reason cancelled
// (POST /message/{id}/cancel), as the dashboard's cancel button does.
type CancelCmd struct {
	Turn string `arg:"" help:"The turn id (what 'fleetd send --async' printed)."`
	From string `default:"lead" help:"Who cancels it, as the log records it."`
	JSON bool   `name:"json" help:"Print the result as JSON."`

	out io.Writer
}

// Run cancels the turn.
func (c *CancelCmd) Run(ctx context.Context, g *Globals) error {
	out := outOr(c.out)
	res, err := newShimClient(g).Cancel(ctx, c.Turn, c.From)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return clitable.JSON(out, res)
	}
	fmt.Fprintf(out, "turn %s on %s: cancelled by %s\n", res.ID, res.Agent, res.By)
	return nil
}

// outOr is w, or stdout when a command was not given one.
func outOr(w io.Writer) io.Writer {
	if w == nil {
		return os.Stdout
	}
	return w
}
