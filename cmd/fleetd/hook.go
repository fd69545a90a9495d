package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/events"
)

// HookCmd is the Claude Code hook entry a fleetd pane's settings run. It
// always exits 0: a hook must never block or fail the agent, so problems
// go to stderr and events NATS cannot take are spooled.
type HookCmd struct {
	Event   string        `arg:"" help:"Hook event: session-start, user-prompt-submit, stop, stop-failure, notification, session-end (or Claude's names, e.g. StopFailure); 'replay' replays the spool." placeholder:"EVENT"`
	Spool   string        `help:"Spool directory for 'replay' (default FLEET_SPOOL_DIR, else ~/.local/state/fleetd/spool)." type:"path" placeholder:"DIR"`
	Timeout time.Duration `help:"Bound on the whole hook run." default:"2s"`
	NoHerdr bool          `help:"Do not report the pane's state to herdr (pane.report_agent)."`
	// AfterPrompt: Claude Code ran the prompt's UserPromptSubmit hook
	// async (fleetd's settings); this later hook appends after it.
	AfterPrompt bool   `help:"The agent ran this prompt's user-prompt-submit hook without waiting for it (fleetd's settings run it async): append and report only once it is done. The settings give it to Stop, StopFailure and Notification."`
	Finish      string `hidden:"" help:"Finish a Stop hook detached: the payload file a hook left, waiting for the transcript." type:"path"`
	// UsageOnly: with --finish, the hook appended the reply; the
	// finisher appends the turn's usage.
	UsageOnly bool `hidden:"" help:"With --finish: append only the turn's usage."`
}

// Run handles one hook, or replays the spool.
func (c *HookCmd) Run(ctx context.Context, g *Globals) error {
	if strings.EqualFold(c.Event, "replay") {
		return c.replay(ctx, g)
	}
	var self []string
	if exe, err := os.Executable(); err == nil {
		self = []string{exe, "hook", c.Event}
	}
	claudehook.Invocation{Event: c.Event, Finish: c.Finish, UsageOnly: c.UsageOnly, Timeout: c.Timeout, NoHerdr: c.NoHerdr,
		AfterPrompt: c.AfterPrompt, Self: self}.
		Exec(ctx, os.Stdin, os.Stderr, os.Getenv)
	return nil
}

// replay appends every spooled event (all agents) to the log.
func (c *HookCmd) replay(ctx context.Context, g *Globals) error {
	dir := c.Spool
	if dir == "" {
		dir = claudehook.SpoolDir(os.Getenv)
	}
	nc, js, err := dialNATS(g, "fleetd hook replay")
	if err != nil {
		return err
	}
	defer nc.Close()
	n, err := claudehook.ReplaySpool(ctx, events.New(js, events.Options{}), dir)
	fmt.Printf("replayed %d event(s) from %s\n", n, dir)
	return err
}

// HooksCmd manages the Claude Code hook installation fleetd panes use.
type HooksCmd struct {
	Settings HooksSettingsCmd `cmd:"" help:"Print (or write) the Claude Code settings JSON that installs fleetd's hooks."`
}

// HooksSettingsCmd renders the `claude --settings` file for fleetd panes.
type HooksSettingsCmd struct {
	Write       string   `help:"Write the settings to FILE instead of stdout." type:"path" placeholder:"FILE"`
	Fleetd      string   `help:"fleetd executable the hooks run (default: this binary's absolute path)." placeholder:"PATH"`
	Hook        string   `help:"Hook binary the hooks run, falling back to 'fleetd hook' where it is missing (default: fleetd-hook beside the fleetd executable when it is there; '-': always 'fleetd hook')." placeholder:"PATH"`
	DefaultMode string   `help:"permissions.defaultMode ('-' leaves it out)." default:"default"`
	Allow       []string `help:"permissions.allow rules, e.g. 'Bash(go test:*)'." placeholder:"RULE"`
}

// Run prints or writes the settings JSON.
func (c *HooksSettingsCmd) Run() error {
	bin := c.Fleetd
	if bin == "" {
		var err error
		if bin, err = claudehook.ThisFleetd(); err != nil {
			return err
		}
	}
	cfg := claudehook.SettingsConfig{Fleetd: bin, Hook: c.Hook, DefaultMode: c.DefaultMode, Allow: c.Allow}
	if c.Write != "" {
		return cfg.WriteFile(c.Write)
	}
	b, err := cfg.JSON()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}
