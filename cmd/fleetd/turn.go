package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/internal/clitable"
)

// TurnCmd shows one turn: its state, its timeline (each step with the
// time since the one before) and, once replied, its reply; with --wait it
// long-polls until the turn is final.
type TurnCmd struct {
	ID   string        `arg:"" help:"The turn id (printed by 'fleetd send --async' or a timed-out send)."`
	Wait time.Duration `help:"Wait up to this long for the turn to finish (0: answer at once)."`
	JSON bool          `name:"json" help:"Print the reply envelope as JSON."`

	out io.Writer
}

// Run prints the turn.
func (c *TurnCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	wait := ""
	if c.Wait > 0 {
		wait = c.Wait.String()
	}
	env, err := newShimClient(g).Turn(ctx, c.ID, wait)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return clitable.JSON(c.out, env)
	}
	// The timeline is the dashboard's; a fleetd without one answers 404
	// and the turn prints without it.
	tl, err := dashboard.API{Get: newShimClient(g)}.Timeline(ctx, c.ID)
	if err != nil {
		tl = dashboard.Timeline{}
	}
	if err := clitable.Turn(c.out, env, tl); err != nil {
		return err
	}
	if env.Status == "failed" {
		return exitError{code: exitFailed, err: fmt.Errorf("turn %s failed: %s %s", env.ID, env.Reason, env.Message)}
	}
	return nil
}
