package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Ensure returns the agent's worktree, creating it when there is none:
//
//   - a worktree on branch fleet/<name> exists (anywhere): it is reused,
//     whatever it holds — an agent spawned again, a session resumed;
//   - the branch exists without a worktree (removed earlier, kept because
//     it was pushed): a worktree is added for it at Spec.Path;
//   - neither: the branch is created from Base, which must exist
//     (ErrNoBase) and, when it is checked out, have no uncommitted
//     changes to tracked files (ErrDirtyBase).
//
// A missing or non-git Repo is ErrNoRepo, a Spec.Path that holds
// something else ErrPathTaken; in every error case nothing was created.
func Ensure(ctx context.Context, s Spec) (Worktree, error) {
	if err := s.Validate(); err != nil {
		return Worktree{}, err
	}
	repo, gitDir, err := resolve(ctx, s.Repo)
	if err != nil {
		return Worktree{}, err
	}
	unlock, err := lock(ctx, gitDir)
	if err != nil {
		return Worktree{}, err
	}
	defer unlock()
	list, err := worktrees(ctx, repo)
	if err != nil {
		return Worktree{}, err
	}
	wt := Worktree{Repo: repo, GitDir: gitDir, Path: s.Path(), Branch: s.Branch(), Base: s.Base}
	if wt.Base == "" {
		if wt.Base, err = mainBranch(list); err != nil {
			return Worktree{}, err
		}
	}
	if e, ok := findBranch(list, wt.Branch); ok {
		if !e.prunable {
			wt.Path = e.path
			return wt, nil
		}
		// Its directory is gone: forget it, and add it again below.
		if _, err := git(ctx, repo, "worktree", "prune"); err != nil {
			return Worktree{}, err
		}
	}
	if err := pathFree(wt.Path); err != nil {
		return Worktree{}, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return Worktree{}, fmt.Errorf("worktree dir: %w", err)
	}
	if _, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		if _, err := git(ctx, repo, "worktree", "add", wt.Path, wt.Branch); err != nil {
			return Worktree{}, err
		}
		wt.Created = true
		return wt, nil
	} else if exitCode(err) != 1 {
		return Worktree{}, err
	}
	if _, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", wt.Base+"^{commit}"); err != nil {
		return Worktree{}, fmt.Errorf("%w: %q is not a branch or commit of %s", ErrNoBase, wt.Base, repo)
	}
	if err := baseClean(ctx, list, wt.Base); err != nil {
		return Worktree{}, err
	}
	if _, err := git(ctx, repo, "worktree", "add", "--no-track", "-b", wt.Branch, wt.Path, wt.Base); err != nil {
		return Worktree{}, err
	}
	wt.Created, wt.NewBranch = true, true
	return wt, nil
}

// Undo takes back what Ensure created for a spawn that failed: the
// worktree it added, unless something was written into it meanwhile
// (then it is kept, and the error says so), and the branch it created,
// unless that branch moved. A reused worktree is left as it was.
func Undo(ctx context.Context, wt Worktree) error {
	if !wt.Created {
		return nil
	}
	wt, err := wt.resolved(ctx)
	if err != nil {
		return err
	}
	unlock, err := lock(ctx, wt.GitDir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := git(ctx, wt.Repo, "worktree", "remove", wt.Path); err != nil {
		return fmt.Errorf("kept worktree %s: %w", wt.Path, err)
	}
	if !wt.NewBranch {
		return nil
	}
	base, err := git(ctx, wt.Repo, "rev-parse", "--verify", wt.Base+"^{commit}")
	if err != nil {
		return err
	}
	// Deleted only while it still points where it was created.
	if _, err := git(ctx, wt.Repo, "update-ref", "-d", "refs/heads/"+wt.Branch, base); err != nil {
		return fmt.Errorf("kept branch %s: %w", wt.Branch, err)
	}
	return nil
}

// resolve finds the repository's main checkout and git directory.
func resolve(ctx context.Context, path string) (repo, gitDir string, err error) {
	if st, err := os.Stat(path); err != nil {
		return "", "", fmt.Errorf("%w: repo %s: %w", ErrNoRepo, path, err)
	} else if !st.IsDir() {
		return "", "", fmt.Errorf("%w: repo %s is not a directory", ErrNoRepo, path)
	}
	gitDir, err = git(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", "", fmt.Errorf("%w: repo %s: %w", ErrNoRepo, path, err)
	}
	repo = gitDir
	if filepath.Base(gitDir) == ".git" {
		repo = filepath.Dir(gitDir)
	}
	return repo, gitDir, nil
}

// entry is one worktree as `git worktree list --porcelain` shows it.
type entry struct {
	path, head, branch string // branch: the short name, "" when detached
	bare, prunable     bool
}

// worktrees lists the repository's worktrees, the main one first.
func worktrees(ctx context.Context, repo string) ([]entry, error) {
	out, err := git(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []entry
	for block := range strings.SplitSeq(strings.TrimSpace(out), "\n\n") {
		var e entry
		for line := range strings.SplitSeq(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				e.path = v
			case "HEAD":
				e.head = v
			case "branch":
				e.branch = strings.TrimPrefix(v, "refs/heads/")
			case "bare":
				e.bare = true
			case "prunable":
				e.prunable = true
			}
		}
		if e.path != "" {
			list = append(list, e)
		}
	}
	return list, nil
}

func findBranch(list []entry, branch string) (entry, bool) {
	for _, e := range list {
		if e.branch == branch {
			return e, true
		}
	}
	return entry{}, false
}

func findPath(list []entry, path string) (entry, bool) {
	for _, e := range list {
		if sameDir(e.path, path) {
			return e, true
		}
	}
	return entry{}, false
}

// sameDir compares two directories, symlinks resolved where they exist.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// mainBranch is the branch the main checkout has checked out: the default
// base.
func mainBranch(list []entry) (string, error) {
	if len(list) == 0 || list[0].bare || list[0].branch == "" {
		return "", fmt.Errorf("%w: the repository's main checkout has no branch checked out: name a base", ErrNoBase)
	}
	return list[0].branch, nil
}

// pathFree reports ErrPathTaken when path holds anything but an empty
// directory.
func pathFree(path string) error {
	entries, err := os.ReadDir(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrPathTaken, path, err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds files but is no worktree of the agent's branch: move it away", ErrPathTaken, path)
	}
	return nil
}

// baseClean refuses a base branch that is checked out with uncommitted
// changes to tracked files. Untracked files are no part of a branch and
// do not count.
func baseClean(ctx context.Context, list []entry, base string) error {
	e, ok := findBranch(list, base)
	if !ok || e.prunable || e.bare {
		return nil
	}
	out, err := git(ctx, e.path, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	lines := strings.Split(out, "\n")
	shown := lines[:min(len(lines), 3)]
	more := ""
	if len(lines) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(lines)-len(shown))
	}
	return fmt.Errorf("%w: %s is checked out at %s with %d changed files (%s%s): commit them first, or a new agent branch starts without them",
		ErrDirtyBase, base, e.path, len(lines), strings.Join(shown, "; "), more)
}
