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
	res, err := newShimClient(g).Stop(ctx, c.Agent, c.From)
	return printResult(c.out, c.JSON, res, err, func(w io.Writer) { fmt.Fprintf(w, "%s: stopped by %s\n", res.Agent, res.By) })
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
	reg, err := newShimClient(g).Restart(ctx, c.Agent, c.From)
	return printResult(c.out, c.JSON, reg, err, func(w io.Writer) { fmt.Fprintf(w, "%s: restarted in pane %s on %s\n", reg.Agent, reg.Pane, reg.Host) })
}

// CancelCmd fails a turn still queued — for an agent, or in its role's
// queue — reason cancelled (POST /message/{id}/cancel), as the
// dashboard's cancel button does.
type CancelCmd struct {
	Turn string `arg:"" help:"The turn id (what 'fleetd send --async' printed)."`
	From string `default:"lead" help:"Who cancels it, as the log records it."`
	JSON bool   `name:"json" help:"Print the result as JSON."`

	out io.Writer
}

// Run cancels the turn.
func (c *CancelCmd) Run(ctx context.Context, g *Globals) error {
	res, err := newShimClient(g).Cancel(ctx, c.Turn, c.From)
	return printResult(c.out, c.JSON, res, err, func(w io.Writer) {
		where := "on " + res.Agent
		if res.Agent == "" {
			where = "in role " + res.Role + "'s queue"
		}
		fmt.Fprintf(w, "turn %s %s: cancelled by %s\n", res.ID, where, res.By)
	})
}

// printResult prints what a shim call answered (res, or err as the
// command's exit): as JSON with --json, else the line line writes.
func printResult[T any](w io.Writer, asJSON bool, res T, err error, line func(io.Writer)) error {
	if err != nil {
		return exitFor(err)
	}
	w = outOr(w)
	if asJSON {
		return clitable.JSON(w, res)
	}
	line(w)
	return nil
}

// outOr is w, or stdout when a command was not given one.
func outOr(w io.Writer) io.Writer {
	if w == nil {
		return os.Stdout
	}
	return w
}
