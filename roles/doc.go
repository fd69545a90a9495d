// Package roles reads fleetd's roles file: for each role its launch
// command, model, env class, concurrency cap and tier, and it enforces the
// subscription boundary: only roles of env class "gateway" may launch with
// ANTHROPIC_BASE_URL (and must, with the allowed URL); "clean" roles must
// not carry it, or any other variable that points Claude Code elsewhere:
// an API key, or another provider (Bedrock, Vertex, Foundry) and its cloud
// credentials (BoundaryVars is the list).
//
// roles imports no other fleetd package.
package roles
