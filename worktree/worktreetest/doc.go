// Package worktreetest gives tests a git repository to make worktrees
// of: one way to run git, one to write a file in it, and one recipe for
// the repository (branch main, one commit holding shared.txt). It
// imports no fleetd package and is only ever imported by tests.
package worktreetest
