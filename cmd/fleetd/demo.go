package main

import (
	"context"
	"time"

	"github.com/fleetd/fleetd/demo"
)

// DemoCmd runs the whole fabric on this machine with nothing installed:
// embedded NATS, a built-in herdr-protocol server with real PTY panes,
// agents in their roles (simulated, or the real CLIs against a fake model
// API), and a lead fanning tasks out through the HTTP shim.
type DemoCmd struct {
	Agents  int           `help:"How many agents, split over the roles: w-claude and w-local (sim, claude), w-<kind> and w-local (one real CLI), or w-<kind> per CLI (mixed, at least one agent each)." default:"4"`
	Tasks   int           `help:"How many tasks the lead fans out." default:"12"`
	Think   time.Duration `help:"How long a simulated agent works on a task." default:"1s"`
	Runtime string        `help:"Where the agents run: herdr (the built-in herdr's PTY panes) or agentapi (each under its own coder/agentapi server, which must be on PATH: the runtime 'fleetd up --runtime agentapi' uses)." default:"herdr" enum:"herdr,agentapi"`
	Kind    string        `help:"Agents: sim (simulated Claude Code); claude, codex, gemini, opencode or pi (that real CLI, against a built-in fake model API in the protocol it speaks); mixed (one role of each real CLI on PATH, at least two); auto (claude when it is on PATH, else sim). A real CLI must be on PATH; the demo says how to install the one missing." default:"sim" enum:"sim,claude,codex,gemini,opencode,pi,mixed,auto"`
	Keep    bool          `help:"Stay up after the run, for exploring with nats and fleetd commands (Ctrl-C to stop)."`
	Dir     string        `help:"Where to keep the demo's data (default: a temp dir, removed at the end unless --keep)." type:"path"`
	Timeout time.Duration `help:"Give up on the run after this long." default:"3m"`
	Plain   bool          `help:"Print progress as plain lines even on a terminal."`
}

// Run performs the demo and exits non-zero unless every turn replied.
func (c *DemoCmd) Run(ctx context.Context, g *Globals) error {
	return demo.Run(ctx, demo.Options{
		Agents: c.Agents, Tasks: c.Tasks, Think: c.Think, Kind: c.Kind, Runtime: c.Runtime, Keep: c.Keep, Dir: c.Dir, Timeout: c.Timeout, Plain: c.Plain,
		Logger: g.quietLogger(), Version: version,
	})
}
