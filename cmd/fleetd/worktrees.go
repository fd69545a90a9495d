package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
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
	sources := lo.Map(rc.Worktrees(c.Role), func(w roles.RoleWorktree, _ int) worktree.Source {
		return worktree.Source{Role: w.Role, Repo: w.Repo, Base: w.Base}
	})
	if len(sources) == 0 && c.Role != "" {
		return fmt.Errorf("role %q gives its agents no worktrees, or is not in the roles file", c.Role)
	}
	if len(sources) == 0 {
		return errors.New("no role in the roles file gives its agents worktrees (\"worktree\": {\"repo\": …})")
	}
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
	header := "NAME\tBRANCH\tDIRTY\tAHEAD\tMERGED\tPUSHED\tAGENT\tPATH"
	if c.Prune {
		header += "\tPRUNE"
	}
	if err := printRows(c.listing, rows, header, "(no agent worktrees)", func(r worktree.Row, _ time.Time) string {
		line := fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", r.Name, worktree.BranchPrefix+r.Name, dirtyColumn(r.Entry), r.Ahead,
			yesNo(r.Merged), yesNo(r.Pushed), agentColumn(r), r.Path)
		if c.Prune {
			switch {
			case r.Pruned:
				line += "\tremoved"
			case r.Live:
				line += "\tin use"
			default:
				line += "\tKEPT: " + r.Kept
			}
		}
		return line
	}); err != nil {
		return err
	}
	return errs
}

func dirtyColumn(e worktree.Entry) string {
	switch {
	case e.Missing:
		return "missing"
	case e.Err != "":
		return "error: " + e.Err
	}
	return fmt.Sprint(e.Dirty)
}

func agentColumn(r worktree.Row) string {
	switch {
	case r.Agent == "":
		return "-"
	case r.Live:
		return r.Agent
	}
	return r.Agent + " (exited)"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// worktreeState says where a worktree's branch stands, to follow its
// name: ", 2 ahead, 3 dirty"; "" when it is level with its base and clean.
func worktreeState(w events.Worktree) string {
	var notes []string
	if w.Ahead > 0 {
		notes = append(notes, fmt.Sprintf("%d ahead", w.Ahead))
	}
	if w.Dirty > 0 {
		notes = append(notes, fmt.Sprintf("%d dirty", w.Dirty))
	}
	if len(notes) == 0 {
		return ""
	}
	return ", " + strings.Join(notes, ", ")
}

// branchColumn is the roster's BRANCH: the agent's branch, how far ahead
// of its base and how many files are uncommitted after its last turn,
// and once it exited, whether its worktree was removed or kept.
func branchColumn(w events.Worktree) string {
	if w.Branch == "" {
		return "-"
	}
	switch {
	case w.Removed:
		return w.Branch + " (worktree removed)"
	case w.Kept != "":
		return w.Branch + " (worktree KEPT: " + w.Kept + ")"
	}
	if s := worktreeState(w); s != "" {
		return w.Branch + " (" + strings.TrimPrefix(s, ", ") + ")"
	}
	return w.Branch
}
