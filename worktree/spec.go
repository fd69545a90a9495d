package worktree

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
)

// BranchPrefix starts the name of every agent branch: fleet/<name>.
const BranchPrefix = "fleet/"

// Spec says which agent checkout to make.
type Spec struct {
	// Repo is the repository: its main checkout or any directory in it.
	// Required, absolute.
	Repo string
	// Base is the branch (or any commit) a new agent branch starts from.
	// Default: the branch the main checkout has checked out.
	Base string
	// Dir holds the worktrees, one directory per Name. Required, absolute.
	Dir string
	// Name is who the checkout is for (an agent id, or a named session
	// whose agents come and go): the worktree is Dir/Name and its branch
	// fleet/Name.
	Name string
}

// nameRE is an agent id's shape (events.ValidAgentID): safe as a path
// element and as a branch name component.
// Compiled on first use, not as every fleetd process (each hook run) starts.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	var errs []error
	if s.Repo == "" || !filepath.IsAbs(s.Repo) {
		errs = append(errs, fmt.Errorf("%w: repo %q must be an absolute path", ErrInvalidSpec, s.Repo))
	}
	if s.Dir == "" || !filepath.IsAbs(s.Dir) {
		errs = append(errs, fmt.Errorf("%w: dir %q must be an absolute path", ErrInvalidSpec, s.Dir))
	}
	if !nameRE().MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("%w: name %q must match %s", ErrInvalidSpec, s.Name, nameRE()))
	}
	return errors.Join(errs...)
}

// Path is where the spec's worktree goes when it is created.
func (s Spec) Path() string { return filepath.Join(s.Dir, s.Name) }

// Branch is the spec's agent branch.
func (s Spec) Branch() string { return BranchPrefix + s.Name }

// Worktree is an agent's checkout as Ensure made or found it.
type Worktree struct {
	// Repo is the repository's main checkout; GitDir its git directory
	// (shared by every worktree: objects, refs), which an agent that
	// commits from a sandbox must be able to write. Remove finds GitDir
	// from Repo when it is empty.
	Repo   string `json:"repo"`
	GitDir string `json:"git_dir"`
	// Path is the worktree's directory, Branch its branch (fleet/<name>)
	// and Base what that branch started from and is measured against.
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Created: this Ensure added the worktree; NewBranch: it also created
	// the branch (from Base). Both false: an existing worktree, reused.
	Created   bool `json:"created,omitempty"`
	NewBranch bool `json:"new_branch,omitempty"`
}
