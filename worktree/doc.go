// Package worktree gives each agent of a fleet its own git worktree of a
// shared repository, so agents that work on one codebase never overwrite
// each other's files: agent (or named session) NAME works in DIR/NAME on
// branch fleet/NAME, which starts from a base branch.
//
// It owns the git side only, through the git CLI: Ensure creates a
// worktree or finds the one that already exists (an agent spawned again,
// a session resumed), Inspect says where its branch is (head, uncommitted
// files, commits ahead of the base), Remove takes it away only when that
// loses nothing — clean, and merged into the base or pushed — and says
// why it kept it otherwise, List shows a repository's fleet worktrees,
// and Survey lists those of several repositories with the agents that
// work in them, pruning what loses nothing when asked (fleetd
// worktrees). Changes to a repository's worktrees are serialised by a
// lock file in its git directory, so a spawn that reuses a worktree and a
// reap that removes it cannot interleave.
//
// It never forces: git refuses to remove a worktree with changes, and
// Remove asks before git would. It never fetches or pushes.
//
// worktree imports no other fleetd package: the hook that reports a
// turn's branch head runs it inside the agent's sandbox, and herdrbridge
// and cmd use it for spawns, reaps and listings.
package worktree
