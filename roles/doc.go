// Package roles reads fleetd's roles file: for each role its launch
// command, model, env class, concurrency cap and tier, and it enforces the
// subscription boundary: only roles of env class "gateway" may launch with
// ANTHROPIC_BASE_URL (and must, with the allowed URL); "clean" roles must
// not carry it, or any other variable that points Claude Code elsewhere:
// an API key, or another provider (Bedrock, Vertex, Foundry) and its cloud
// credentials (BoundaryVars is the list).
//
// A role may also give its agents their own git worktrees of a repository
// (Role.Worktree) and name a sandbox (Role.Sandbox): a launch template
// that wraps the agent's command, which fleetd fills in with only what it
// owns (the guarded environment, the hooks, the worktree) and never builds
// or provisions. Bwrap is the bubblewrap profile fleetd ships; docs/worktrees.md
// shows it word for word and a podman template beside it, and a test
// keeps both true.
//
// roles imports no other fleetd package.
package roles
