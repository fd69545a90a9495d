package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Removal is what Remove did with a worktree, and what it found.
type Removal struct {
	State
	Pushed bool `json:"pushed,omitempty"`
	// Removed: the worktree is gone (removed now, or already gone).
	Removed bool `json:"removed,omitempty"`
	// BranchDeleted: its branch was merged into the base and deleted too.
	// A branch that was only pushed stays.
	BranchDeleted bool `json:"branch_deleted,omitempty"`
	// Kept says why the worktree was kept; empty when it was removed.
	Kept string `json:"kept,omitempty"`
}

// Remove takes an agent's worktree away, but only when that loses
// nothing: no uncommitted or untracked files, and every commit on it
// merged into wt.Base or pushed to a remote. Otherwise it keeps the
// worktree and Removal.Kept says why (that is no error). A worktree
// already gone counts as removed; a directory at wt.Path that is not a
// worktree of wt.Repo is kept, never deleted. When everything is merged
// the branch is deleted as well. The error is for what Remove could not
// find out (the repository gone, git failing), and then nothing was
// removed.
func Remove(ctx context.Context, wt Worktree) (Removal, error) {
	wt, err := wt.resolved(ctx)
	if err != nil {
		return Removal{}, err
	}
	unlock, err := lock(ctx, wt.GitDir)
	if err != nil {
		return Removal{}, err
	}
	defer unlock()
	list, err := worktrees(ctx, wt.Repo)
	if err != nil {
		return Removal{}, err
	}
	e, known := findPath(list, wt.Path)
	_, statErr := os.Stat(wt.Path)
	gone := errors.Is(statErr, os.ErrNotExist)
	switch {
	case !known && gone:
		return Removal{Removed: true}, nil
	case !known:
		return Removal{Kept: fmt.Sprintf("%s is not a worktree of %s", wt.Path, wt.Repo)}, nil
	case gone || e.prunable:
		_, err := git(ctx, wt.Repo, "worktree", "prune")
		return Removal{Removed: err == nil}, err
	}
	st, err := Inspect(ctx, wt.Path, wt.Base)
	if err != nil {
		return Removal{}, err
	}
	r := Removal{State: st}
	switch {
	case st.Dirty > 0:
		r.Kept = fmt.Sprintf("%d uncommitted %s", st.Dirty, plural(st.Dirty, "file", "files"))
		return r, nil
	case st.Ahead > 0:
		if r.Pushed, err = Pushed(ctx, wt.Path); err != nil {
			return Removal{}, err
		}
		if !r.Pushed {
			r.Kept = fmt.Sprintf("%d %s neither merged into %s nor pushed", st.Ahead, plural(st.Ahead, "commit", "commits"), wt.Base)
			return r, nil
		}
	}
	if _, err := git(ctx, wt.Repo, "worktree", "remove", wt.Path); err != nil {
		r.Kept = err.Error()
		return r, nil
	}
	r.Removed = true
	if st.Ahead == 0 && st.Branch == wt.Branch && st.Head != "" {
		// Merged: the branch holds nothing the base does not. Deleted
		// only while it still points where the worktree left it.
		if _, err := git(ctx, wt.Repo, "update-ref", "-d", "refs/heads/"+wt.Branch, st.Head); err == nil {
			r.BranchDeleted = true
		}
	}
	return r, nil
}

// resolved fills in the repository's main checkout and git directory
// when wt came from a record that holds only its repository.
func (wt Worktree) resolved(ctx context.Context) (Worktree, error) {
	if wt.GitDir != "" {
		return wt, nil
	}
	repo, gitDir, err := resolve(ctx, wt.Repo)
	if err != nil {
		return wt, err
	}
	wt.Repo, wt.GitDir = repo, gitDir
	return wt, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
