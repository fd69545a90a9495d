package main

import (
	"context"
	"fmt"
	"os"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/internal/clitable"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/worktree"
)

// WorktreesCmd lists the agent worktrees of this host's repositories: the
// fleet/ branches of every repository a role gives its agents worktrees
// of, read from git, with the agent the roster says works there.
type WorktreesCmd struct {
	listing
	Role  string `help:"Only the worktrees of this role's repository."`
	Prune bool   `help:"Remove the worktrees no live agent works in, when that loses nothing (clean, and merged or pushed); say why each other one is kept."`
	Roles string `help:"Roles file (JSON)." env:"FLEET_ROLES" type:"path"`
}

// Run lists (and with --prune, removes) the worktrees.
func (c *WorktreesCmd) Run(ctx context.Context, g *Globals) error {
	rc, err := roles.Load(c.Roles)
	if err != nil {
		return err
	}
	repos, err := rc.Worktrees(c.Role)
	if err != nil {
		return err
	}
	sources := lo.Map(repos, func(w roles.RoleWorktree, _ int) worktree.Source {
		return worktree.Source{Role: w.Role, Repo: w.Repo, Base: w.Base}
	})
	roster, rosterErr := newShimClient(g).Roster(ctx)
	if rosterErr != nil && c.Prune {
		return exitFor(fmt.Errorf("--prune needs the roster, to leave live agents' worktrees alone: %w", rosterErr))
	}
	// Only this host's agents work in this host's worktrees.
	host := g.hostName()
	occupants := lo.FilterMap(roster, func(a projections.Agent, _ int) (worktree.Occupant, bool) {
		return worktree.Occupant{Agent: a.Agent, Path: a.Worktree.Path, Live: !a.Exited}, host == "" || a.Host == host
	})
	rows, errs := worktree.Survey(ctx, sources, occupants, c.Prune)
	if rosterErr != nil {
		fmt.Fprintf(os.Stderr, "fleetd worktrees: no roster (%v): agents not shown\n", rosterErr)
	}
	if err := printRows(c.listing, rows, clitable.Worktrees(c.Prune)); err != nil {
		return err
	}
	return errs
}
