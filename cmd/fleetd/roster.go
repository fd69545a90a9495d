package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/internal/clitable"
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
		// The footer says why the fleet is degraded; nothing when it is
		// ok or /healthz cannot be read.
		defer func() {
			if h, err := newShimClient(g).Health(ctx); err == nil {
				clitable.Health(c.writer(), h)
			}
		}()
	}
	return printRows(c.listing, agents, clitable.Roster)
}

// rosterAt reads the roster as of --at (read here, in this machine's
// zone) and says what it is as of before the table.
func (c *RosterCmd) rosterAt(ctx context.Context, g *Globals) ([]projections.Agent, error) {
	p, err := dashboard.ParseAt(c.At, time.Now())
	if err != nil {
		return nil, exitError{code: exitRefused, err: fmt.Errorf("--at %w", err)}
	}
	r, err := dashboard.API{Get: newShimClient(g)}.RosterAt(ctx, p)
	if err != nil {
		return nil, err
	}
	if !c.JSON {
		clitable.AsOf(c.writer(), r.At, r.Seq)
	}
	at := r.At
	c.now = func() time.Time { return at }
	return lo.FromSlicePtr(r.Agents), nil
}

// SessionsCmd prints the named, resumable agent sessions.
type SessionsCmd struct{ listing }

// Run fetches GET /sessions and prints a table.
func (c *SessionsCmd) Run(ctx context.Context, g *Globals) error {
	sessions, err := newShimClient(g).Sessions(ctx)
	if err != nil {
		return exitFor(err)
	}
	return printRows(c.listing, sessions, clitable.Sessions)
}

// listing is what the listing commands share: --json, and where and
// against which clock they print (tests set both).
type listing struct {
	JSON bool `name:"json" help:"Print JSON instead of a table."`

	out io.Writer
	now func() time.Time
}

func (l listing) writer() io.Writer {
	if l.out == nil {
		return os.Stdout
	}
	return l.out
}

// printRows writes rows as JSON, or as table t.
func printRows[T any](l listing, rows []T, t clitable.Table[T]) error {
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	return t.Print(l.writer(), rows, now, l.JSON)
}
