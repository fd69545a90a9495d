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

// CostCmd prints what the agents' hooks recorded — each reply's tokens
// and cost — summed by agent, role, session, job or kind over a window.
type CostCmd struct {
	By    string `help:"Group by: agent, role, session, job or kind (the agents' CLI)." default:"agent" enum:"agent,role,session,job,kind"`
	Since string `help:"The window: a duration before its end (24h, 7d), a time (RFC 3339) or all." default:"24h" placeholder:"WHEN"`
	At    string `help:"End the window here instead of now: a time (14:02, RFC 3339), a duration ago (10m) or a log position (#1234)." placeholder:"WHEN"`
	JSON  bool   `name:"json" help:"Print the report as JSON."`

	out io.Writer
}

// Run fetches the dashboard's cost report and prints it as a table.
func (c *CostCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	var at dashboard.Point
	if c.At != "" {
		var err error
		if at, err = dashboard.ParseAt(c.At, time.Now()); err != nil {
			return exitError{code: exitRefused, err: fmt.Errorf("--at %w", err)}
		}
	}
	since, err := dashboard.SinceParam(c.Since, time.Now())
	if err != nil {
		return exitError{code: exitRefused, err: fmt.Errorf("--since %q: want a duration (24h, 7d), a time or all", c.Since)}
	}
	r, err := dashboard.API{Get: newShimClient(g)}.Cost(ctx, c.By, since, at)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return clitable.JSON(c.out, r)
	}
	return clitable.Cost(c.out, r)
}
