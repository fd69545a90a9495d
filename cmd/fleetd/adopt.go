package main

import (
	"context"
	"fmt"
)

// AdoptCmd registers an existing herdr pane of this host as an agent.
type AdoptCmd struct {
	Pane string `arg:"" help:"herdr pane id, e.g. w1:p2."`
	As   string `help:"Agent id to register it as." required:""`
	Role string `help:"The agent's role." required:""`
	herdrFlags
}

// Run adopts the pane.
func (c *AdoptCmd) Run(ctx context.Context, g *Globals) error {
	cb, err := c.bridge(ctx, g)
	if err != nil {
		return err
	}
	defer cb.Close()
	reg, err := cb.Bridge.Adopt(ctx, c.Pane, c.As, c.Role)
	if err != nil {
		return err
	}
	fmt.Printf("adopted pane %s as %s (role %s) on host %s\n", reg.Pane, reg.Agent, reg.Role, reg.Host)
	return nil
}
