package main

import (
	"context"
	"time"

	"github.com/fleetd/fleetd/simagent"
)

// SimAgentCmd runs a simulated Claude Code in the current terminal (a herdr
// pane): it fires the real `fleetd hook` commands, so tests and the demo
// exercise the whole fabric without a model. Launch it with
// HERDR_AGENT=claude in its environment so herdr detects it as claude. A
// prompt holding "[orchestrate: ARGS]" makes it act as a main: it runs
// `fleetd orchestrate ARGS` and replies with the rollup printed.
type SimAgentCmd struct {
	Think         time.Duration `help:"How long each turn works (a prompt's [delay=500ms] overrides it)." default:"2s"`
	Model         string        `help:"Model name reported in hooks and the transcript." default:"claude-sim-1"`
	ReplyPrefix   string        `help:"Every reply is this prefix followed by the prompt." default:"SIM: "`
	Fleetd        string        `help:"fleetd executable to fire hooks with (default: this binary)." placeholder:"PATH"`
	NoHooks       bool          `help:"Fire no hooks."`
	TranscriptDir string        `help:"Directory for the session transcript (default: a temp dir)." type:"path" placeholder:"DIR"`
	Resume        string        `help:"Continue this Claude session id, as 'claude --resume' does: the hooks report it as the session id." placeholder:"ID"`
	PasteLag      time.Duration `help:"How long a paste takes to show in the prompt box; an Enter before that joins it as a newline, as in Claude Code (negative: at once)." default:"40ms"`
	HookCPU       string        `help:"Append each hook run's CPU time (microseconds, from its rusage) to this file, a line per run (the bench's fan-out sums them)." type:"path" placeholder:"FILE"`
	SyncHooks     bool          `help:"Wait for every hook, user-prompt-submit too, as Claude Code runs a settings file without async hooks (the bench's floor); by default the hooks run as fleetd's settings have Claude Code run them."`
}

// Run serves prompts on stdin/stdout until /exit or the terminal closes.
func (c *SimAgentCmd) Run(ctx context.Context) error {
	return simagent.RunOnTerminal(ctx, simagent.Config{
		Think: c.Think, Model: c.Model, ReplyPrefix: c.ReplyPrefix, Fleetd: c.Fleetd, NoHooks: c.NoHooks,
		TranscriptDir: c.TranscriptDir, Resume: c.Resume, PasteLag: c.PasteLag, HookCPU: c.HookCPU, SyncHooks: c.SyncHooks,
	})
}
