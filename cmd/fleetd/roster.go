package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// RosterCmd prints the fleet's agents as the projection sees them.
type RosterCmd struct {
	JSON bool `name:"json" help:"Print the roster as JSON."`

	out io.Writer
	now func() time.Time
}

// Run fetches GET /roster and prints a table.
func (c *RosterCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	if c.now == nil {
		c.now = time.Now
	}
	agents, err := newShimClient(g).Roster(ctx)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return writeJSONTo(c.out, agents)
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tHOST\tROLE\tSTATUS\tTURN\tQUEUE\tMODEL\tTOKENS\tLAST SEEN")
	for _, a := range agents {
		status := string(a.Status)
		switch {
		case a.Exited:
			status += " (exited)"
		case a.Stale:
			status += " (stale)"
		case a.SessionEnded:
			status += " (session ended)"
		}
		if a.NeedsAttention != "" {
			status += " NEEDS ATTENTION: " + a.NeedsAttention
		}
		if a.Violation != "" {
			status += " BOUNDARY"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%s\n", a.Agent, dash(a.Host), dash(a.Role), status,
			dash(a.CurrentTurn), a.QueueDepth, dash(a.Model), a.Tokens.In, a.Tokens.Out, ago(c.now(), a.LastSeen))
	}
	if len(agents) == 0 {
		fmt.Fprintln(tw, "(no agents: spawn one with 'fleetd spawn' or adopt a pane with 'fleetd adopt')")
	}
	return tw.Flush()
}

// ago renders how long ago t was, coarsely.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}
