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
	"github.com/fleetd/fleetd/projections"
)

// RosterCmd prints the fleet's agents as the projection sees them, now
// or as of a point in the log.
type RosterCmd struct {
	listing
	At string `help:"Show the roster as it was then: a time (14:02:10, RFC 3339), a duration ago (10m, 2d) or a log position (#1234); folded from the log up to that point." placeholder:"WHEN"`
}

// Run fetches GET /roster (with --at, the dashboard's roster as of the
// point) and prints a table.
func (c *RosterCmd) Run(ctx context.Context, g *Globals) error {
	var agents []projections.Agent
	var err error
	if c.At == "" {
		agents, err = newShimClient(g).Roster(ctx)
	} else {
		agents, err = c.rosterAt(ctx, g)
	}
	if err != nil {
		return exitFor(err)
	}
	if c.At == "" && !c.JSON {
		out := c.out
		if out == nil {
			out = os.Stdout
		}
		defer healthFooter(ctx, g, out)
	}
	return printRows(c.listing, agents, "AGENT\tHOST\tROLE\tSTATUS\tTURN\tQUEUE\tMODEL\tTOKENS\tBRANCH\tLAST SEEN",
		"(no agents: spawn one with 'fleetd spawn' or adopt a pane with 'fleetd adopt')",
		func(a projections.Agent, now time.Time) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%s\t%s", a.Agent, dash(a.Host), dash(a.Role), agentStatus(a),
				dash(a.CurrentTurn), a.QueueDepth, dash(a.Model), a.Tokens.In, a.Tokens.Out, branchColumn(a.Worktree), ago(now, a.LastSeen))
		})
}

// rosterAt reads the roster as of --at (read here, in this machine's
// zone) and says what it is as of before the table.
func (c *RosterCmd) rosterAt(ctx context.Context, g *Globals) ([]projections.Agent, error) {
	p, err := dashboard.ParseAt(c.At, time.Now())
	if err != nil {
		return nil, exitError{code: exitRefused, err: fmt.Errorf("--at %w", err)}
	}
	var r dashboard.RosterAt
	if err := newShimClient(g).Do(ctx, http.MethodGet, "/ui/api/roster?at="+url.QueryEscape(p.String()), nil, &r); err != nil {
		return nil, err
	}
	if !c.JSON {
		out := c.out
		if out == nil {
			out = os.Stdout
		}
		fmt.Fprintf(out, "as of %s (log #%d)\n", r.At.Local().Format("2006-01-02 15:04:05.000"), r.Seq)
	}
	at := r.At
	c.now = func() time.Time { return at }
	return r.Agents, nil
}

// agentStatus is the STATUS column: the status, then whatever a person
// should notice about the agent.
func agentStatus(a projections.Agent) string {
	status := string(a.Status)
	switch {
	case a.FailedToStart != "":
		status += " (failed to start: " + a.FailedToStart + ")"
	case a.Restarting:
		status += " (restarting)"
	case a.Stale:
		// Nothing its host's gateway would say is heard: not even
		// whether it started.
		status += " (stale: its host is silent)"
	case a.Starting:
		status += " (starting)"
	case a.Exited:
		status += " (exited)"
	case a.SessionEnded:
		status += " (session ended)"
	}
	if a.Restarts > 0 {
		status += fmt.Sprintf(" restarts=%d", a.Restarts)
	}
	if a.NeedsAttention != "" {
		status += " NEEDS ATTENTION: " + a.NeedsAttention
	}
	if a.Violation != "" {
		status += " BOUNDARY"
	}
	switch b := a.Budget; {
	case b.Exhausted():
		status += fmt.Sprintf(" OUT OF BUDGET (%s %s) until %s", b.Scope, b.Limit, b.FreesAt.Local().Format("15:04"))
	case b != nil:
		status += fmt.Sprintf(" BUDGET %.0f%% (%s %s)", 100*b.Used/b.Max, b.Scope, b.Limit)
	}
	return status
}

// healthFooter says, under the roster, why the fleet is degraded, when
// /healthz says it is; nothing when it is ok or cannot be read.
func healthFooter(ctx context.Context, g *Globals, out io.Writer) {
	h, err := newShimClient(g).Health(ctx)
	if err != nil || h.Status != "degraded" {
		return
	}
	fmt.Fprintln(out, "\nhealth: degraded")
	for _, r := range h.Reasons {
		fmt.Fprintln(out, "  "+r)
	}
}

// SessionsCmd prints the named, resumable agent sessions.
type SessionsCmd struct{ listing }

// Run fetches GET /sessions and prints a table.
func (c *SessionsCmd) Run(ctx context.Context, g *Globals) error {
	sessions, err := newShimClient(g).Sessions(ctx)
	if err != nil {
		return exitFor(err)
	}
	return printRows(c.listing, sessions, "SESSION\tAGENT\tSTATE\tTURNS\tTOKENS\tMODEL\tLAST ACTIVE\tRESUME", "(no sessions yet)",
		func(s projections.Session, now time.Time) string {
			return fmt.Sprintf("%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s", s.Name, dash(s.Agent), dash(s.State), s.Turns,
				s.Tokens.In, s.Tokens.Out, dash(s.Model), ago(now, s.LastActive), dash(s.Resume))
		})
}

// listing is what the listing commands share: --json, and where and
// against which clock they print (tests set both).
type listing struct {
	JSON bool `name:"json" help:"Print JSON instead of a table."`

	out io.Writer
	now func() time.Time
}

// printRows writes rows as JSON, or as a table under header with one line a
// row (empty when there are none).
func printRows[T any](l listing, rows []T, header, empty string, line func(T, time.Time) string) error {
	out, now := l.out, time.Now()
	if out == nil {
		out = os.Stdout
	}
	if l.now != nil {
		now = l.now()
	}
	if l.JSON {
		return writeJSONTo(out, rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, line(r, now))
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, empty)
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
