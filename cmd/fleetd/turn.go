package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/fleetd/fleetd/dashboard"
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
		return writeJSONTo(c.out, env)
	}
	fmt.Fprintf(c.out, "turn %s: %s  agent=%s role=%s model=%s tokens=%d/%d duration=%s\n",
		env.ID, env.Status, dash(env.Agent), dash(env.Role), dash(env.Model), env.Tokens.In, env.Tokens.Out,
		(time.Duration(env.DurationMS) * time.Millisecond).String())
	// The timeline is the dashboard's; a fleetd without one answers 404
	// and the turn prints as before.
	var tl dashboard.Timeline
	if err := newShimClient(g).Do(ctx, http.MethodGet, "/ui/api/turns/"+url.PathEscape(c.ID), nil, &tl); err == nil {
		printTimeline(c.out, tl)
	}
	switch env.Status {
	case "replied":
		fmt.Fprintln(c.out, env.Reply)
	case "failed":
		return exitError{code: exitFailed, err: fmt.Errorf("turn %s failed: %s %s", env.ID, env.Reason, env.Message)}
	}
	return nil
}

// printTimeline writes a turn's steps, one a line: when, the time since
// the step before, the step, what it says.
func printTimeline(w io.Writer, tl dashboard.Timeline) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range tl.Steps {
		delta := ""
		if s.SincePrevMS > 0 {
			delta = "+" + (time.Duration(s.SincePrevMS * float64(time.Millisecond))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.At.Local().Format("15:04:05.000"), delta, s.Step, s.Detail)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
