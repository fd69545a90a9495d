package worktree

import "errors"

var (
	// ErrInvalidSpec means a Spec failed validation (Spec.Validate joins
	// every problem).
	ErrInvalidSpec = errors.New("worktree: invalid spec")
	// ErrNoRepo means the repository does not exist or is not a git
	// repository.
	ErrNoRepo = errors.New("worktree: not a git repository")
	// ErrNoBase means the base does not name a commit of the repository.
	ErrNoBase = errors.New("worktree: base not found")
	// ErrDirtyBase means the base branch is checked out with uncommitted
	// changes: a new agent branch would start without them, which is
	// rarely what the lead meant. Commit (or stash) them first.
	ErrDirtyBase = errors.New("worktree: base has uncommitted changes")
	// ErrPathTaken means the worktree's path exists and is not the
	// agent's worktree (a leftover directory, another checkout).
	ErrPathTaken = errors.New("worktree: path already exists")
	// ErrGit means a git command failed; the error carries its output.
	ErrGit = errors.New("worktree: git failed")
)
