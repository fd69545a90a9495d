package herdrbridge

import (
	"context"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/worktree"
)

// reapTimeout bounds the git commands that decide an exited agent's
// worktree.
const reapTimeout = 30 * time.Second

// reapWorktree decides what becomes of an exited agent's worktree, for
// its AgentExited: removed when that loses nothing (clean, and merged or
// pushed), otherwise kept, with why. A worktree another live agent works
// in (the next agent of a named session) is kept for it; one that cannot
// be checked is kept too. Nothing is ever forced.
func (b *Bridge) reapWorktree(ctx context.Context, agent string, w events.Worktree) events.Worktree {
	if w.Path == "" {
		return events.Worktree{}
	}
	out := events.Worktree{Repo: w.Repo, Path: w.Path, Branch: w.Branch, Base: w.Base}
	b.mu.Lock()
	for id, o := range b.agents {
		if id != agent && o.registered && !o.exited && o.worktree == w.Path {
			out.Kept = "in use by " + id
		}
	}
	b.mu.Unlock()
	if out.Kept != "" {
		return out
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	r, err := worktree.Remove(ctx, worktree.Worktree{Repo: w.Repo, Path: w.Path, Branch: w.Branch, Base: w.Base})
	if err != nil {
		out.Kept = "not checked: " + err.Error()
	} else {
		out.Removed, out.Kept = r.Removed, r.Kept
		out.Branch, out.Head, out.Dirty, out.Ahead = r.Branch, r.Head, r.Dirty, r.Ahead
		if out.Branch == "" {
			out.Branch = w.Branch
		}
	}
	if out.Kept != "" {
		b.log.Warn("worktree kept", "agent", agent, "worktree", w.Path, "why", out.Kept)
	} else {
		b.log.Info("worktree removed", "agent", agent, "worktree", w.Path, "branch deleted", r.BranchDeleted)
	}
	return out
}

// undoWorktree takes back the worktree a failed spawn created, and says
// what became of it for the spawn's AgentExited.
func (b *Bridge) undoWorktree(ctx context.Context, wt worktree.Worktree) events.Worktree {
	if !wt.Created {
		return events.Worktree{}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	out := events.Worktree{Repo: wt.Repo, Path: wt.Path, Branch: wt.Branch, Base: wt.Base}
	if err := worktree.Undo(ctx, wt); err != nil {
		out.Kept = err.Error()
		b.log.Warn("worktree of a failed spawn kept", "worktree", wt.Path, "why", err)
		return out
	}
	out.Removed = true
	return out
}
