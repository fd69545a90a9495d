package worktree

import (
	"context"
	"errors"
	"fmt"
)

// Source is one repository a Survey covers: its fleet worktrees are
// inspected against Base, and their rows carry Role, the role that gives
// its agents worktrees of Repo.
type Source struct {
	Role string
	Repo string
	Base string
}

// Occupant is an agent that works in the worktree at Path (Live) or last
// did. Survey takes them from the caller, so this package stays free of
// the roster: the caller says whose agents count.
type Occupant struct {
	Agent string
	Path  string
	Live  bool
}

// Row is one worktree of a Survey: what List found, where it comes from,
// who works there and, when the survey pruned, what became of it.
type Row struct {
	Entry
	Role   string `json:"role"`
	Repo   string `json:"repo"`
	Merged bool   `json:"merged"`
	// Agent is the agent that works there (or last did), and Live
	// whether it still does.
	Agent string `json:"agent,omitempty"`
	Live  bool   `json:"live,omitempty"`
	// Pruned and Kept say what a pruning survey did: removed it, or kept
	// it and why.
	Pruned bool   `json:"pruned,omitempty"`
	Kept   string `json:"kept,omitempty"`
}

// Survey lists the fleet worktrees of every source, each with its agent
// among occupants. With prune it also removes each one no live agent
// works in, when that loses nothing (Remove), and Row.Kept says why it
// kept the others. A source that cannot be listed adds its error to the
// returned one; the rows of the other sources are returned all the same.
func Survey(ctx context.Context, sources []Source, occupants []Occupant, prune bool) ([]Row, error) {
	var rows []Row
	var errs []error
	for _, s := range sources {
		list, err := List(ctx, s.Repo, s.Base)
		if err != nil {
			errs = append(errs, fmt.Errorf("role %s: %w", s.Role, err))
			continue
		}
		for _, e := range list {
			row := Row{Entry: e, Role: s.Role, Repo: s.Repo, Merged: e.Merged()}
			row.Agent, row.Live = occupant(occupants, e.Path)
			if prune && !row.Live {
				row.prune(ctx)
			}
			rows = append(rows, row)
		}
	}
	return rows, errors.Join(errs...)
}

// prune removes the row's worktree when that loses nothing, and records
// what it did.
func (r *Row) prune(ctx context.Context) {
	rm, err := Remove(ctx, Worktree{Repo: r.Repo, Path: r.Path, Branch: BranchPrefix + r.Name, Base: r.Base})
	switch {
	case err != nil:
		r.Kept = "not checked: " + err.Error()
	case rm.Removed:
		r.Pruned = true
	default:
		r.Kept = rm.Kept
	}
}

// occupant is the agent that works in the worktree at path — a live one
// first — else the last that did, and whether it is live.
func occupant(occupants []Occupant, path string) (string, bool) {
	agent := ""
	for _, o := range occupants {
		if o.Path != path {
			continue
		}
		if o.Live {
			return o.Agent, true
		}
		agent = o.Agent
	}
	return agent, false
}
