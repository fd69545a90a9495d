package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// State is where an agent's worktree stands.
type State struct {
	// Branch is the branch checked out ("" when HEAD is detached), Head
	// the commit it points at.
	Branch string `json:"branch,omitempty"`
	Head   string `json:"head,omitempty"`
	// Dirty counts the files with uncommitted changes, untracked ones
	// included (ignored ones, such as .fleet/, are not).
	Dirty int `json:"dirty,omitempty"`
	// Ahead counts the commits on HEAD that the base does not have: 0
	// means everything done here is merged into the base.
	Ahead int `json:"ahead,omitempty"`
}

// Inspect reads the worktree at path: its branch, head, uncommitted files
// and commits ahead of base (as it resolves in the worktree; empty base:
// Ahead is not counted). It takes no lock and writes nothing, so it can
// run beside the agent's own git commands.
func Inspect(ctx context.Context, path, base string) (State, error) {
	out, err := git(ctx, path, "status", "--porcelain=v2", "--branch", "--untracked-files=normal")
	if err != nil {
		return State{}, err
	}
	var s State
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case strings.HasPrefix(line, "# branch.oid "):
			if oid := strings.TrimPrefix(line, "# branch.oid "); oid != "(initial)" {
				s.Head = oid
			}
		case strings.HasPrefix(line, "# branch.head "):
			if b := strings.TrimPrefix(line, "# branch.head "); b != "(detached)" {
				s.Branch = b
			}
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			s.Dirty++
		}
	}
	if base == "" || s.Head == "" {
		return s, nil
	}
	n, err := git(ctx, path, "rev-list", "--count", base+"..HEAD")
	if err != nil {
		return s, fmt.Errorf("%w: %q in %s: %w", ErrNoBase, base, path, err)
	}
	if s.Ahead, err = strconv.Atoi(n); err != nil {
		return s, fmt.Errorf("%w: rev-list --count said %q", ErrGit, n)
	}
	return s, nil
}

// Pushed reports whether the worktree's HEAD is on a remote: some
// remote-tracking branch contains it.
func Pushed(ctx context.Context, path string) (bool, error) {
	out, err := git(ctx, path, "for-each-ref", "--count=1", "--contains", "HEAD", "--format=%(refname)", "refs/remotes")
	if err != nil {
		return false, err
	}
	return out != "", nil
}

// Entry is one fleet worktree of a repository, as List finds it.
type Entry struct {
	// Name is the agent or session the worktree is for (its branch minus
	// fleet/).
	Name string `json:"name"`
	Path string `json:"path"`
	State
	Base   string `json:"base"`
	Pushed bool   `json:"pushed,omitempty"`
	// Missing: git knows the worktree but its directory is gone.
	Missing bool `json:"missing,omitempty"`
	// Err is why the worktree could not be read.
	Err string `json:"error,omitempty"`
}

// Merged reports whether everything on the worktree's branch is in its
// base.
func (e Entry) Merged() bool { return e.Err == "" && !e.Missing && e.Ahead == 0 }

// List returns the repository's fleet worktrees (those on a fleet/
// branch), each inspected against base (default: the main checkout's
// branch).
func List(ctx context.Context, repo, base string) ([]Entry, error) {
	root, _, err := resolve(ctx, repo)
	if err != nil {
		return nil, err
	}
	list, err := worktrees(ctx, root)
	if err != nil {
		return nil, err
	}
	if base == "" {
		if base, err = mainBranch(list); err != nil {
			return nil, err
		}
	}
	var out []Entry
	for _, e := range list {
		name, ok := strings.CutPrefix(e.branch, BranchPrefix)
		if !ok {
			continue
		}
		en := Entry{Name: name, Path: e.path, Base: base}
		if _, err := os.Stat(e.path); errors.Is(err, os.ErrNotExist) || e.prunable {
			en.Missing, en.Branch, en.Head = true, e.branch, e.head
			out = append(out, en)
			continue
		}
		if en.State, err = Inspect(ctx, e.path, base); err != nil {
			en.Err = err.Error()
		} else if en.Ahead > 0 {
			if en.Pushed, err = Pushed(ctx, e.path); err != nil {
				en.Err = err.Error()
			}
		}
		out = append(out, en)
	}
	return out, nil
}
