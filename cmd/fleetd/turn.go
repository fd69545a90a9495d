package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// TurnCmd shows one turn: its state and, once replied, its reply; with
// --wait it long-polls until the turn is final.
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
		return writeJSONTo(c.out, env)
	}
	fmt.Fprintf(c.out, "turn %s: %s  agent=%s role=%s model=%s tokens=%d/%d duration=%s\n",
		env.ID, env.Status, dash(env.Agent), dash(env.Role), dash(env.Model), env.Tokens.In, env.Tokens.Out,
		(time.Duration(env.DurationMS) * time.Millisecond).String())
	switch env.Status {
	case "replied":
		fmt.Fprintln(c.out, env.Reply)
	case "failed":
		return exitError{code: exitFailed, err: fmt.Errorf("turn %s failed: %s %s", env.ID, env.Reason, env.Message)}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
