package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// SessionsCmd prints the named, resumable agent sessions.
type SessionsCmd struct {
	JSON bool `name:"json" help:"Print the sessions as JSON."`

	out io.Writer
	now func() time.Time
}

// Run fetches GET /sessions and prints a table.
func (c *SessionsCmd) Run(ctx context.Context, g *Globals) error {
	if c.out == nil {
		c.out = os.Stdout
	}
	if c.now == nil {
		c.now = time.Now
	}
	sessions, err := newShimClient(g).Sessions(ctx)
	if err != nil {
		return exitFor(err)
	}
	if c.JSON {
		return writeJSONTo(c.out, sessions)
	}
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAGENT\tSTATE\tTURNS\tTOKENS\tMODEL\tLAST ACTIVE\tRESUME")
	for _, s := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", s.Name, dash(s.Agent), dash(s.State), s.Turns,
			s.Tokens.In, s.Tokens.Out, dash(s.Model), ago(c.now(), s.LastActive), dash(s.Resume))
	}
	if len(sessions) == 0 {
		fmt.Fprintln(tw, "(no sessions yet)")
	}
	return tw.Flush()
}
