package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	Finish  string        `hidden:"" help:"Finish a Stop hook detached: the payload file a hook left, waiting for the transcript." type:"path"`
}

// Run handles one hook, or replays the spool.
func (c *HookCmd) Run(ctx context.Context, g *Globals) error {
	if strings.EqualFold(c.Event, "replay") {
		return c.replay(ctx, g)
	}
	if c.Finish != "" {
		return c.finish(ctx)
	}
	err := claudehook.Run(ctx, c.Event, os.Stdin, os.Getenv, claudehook.Options{
		Timeout: c.Timeout, NoHerdr: c.NoHerdr, Stderr: os.Stderr, Detach: detachFinisher(c.Event),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetd hook:", err)
	}
	return nil
}

// detachFinisher hands a Stop hook's payload to a detached `fleetd hook
// <event> --finish FILE`: Claude Code may write the reply's transcript line
// only after its hooks return, so the finisher, not the hook, waits for it.
func detachFinisher(event string) func([]byte) error {
	return func(payload []byte) error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		f, err := os.CreateTemp("", "fleetd-hook-*.json")
		if err != nil {
			return err
		}
		if _, err := f.Write(payload); err != nil {
			f.Close()
			os.Remove(f.Name())
			return err
		}
		f.Close()
		cmd := exec.Command(exe, "hook", event, "--finish", f.Name())
		// Its own session and no inherited pipes: Claude Code waits for the
		// hook's output to close, and must not wait for the finisher.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			os.Remove(f.Name())
			return err
		}
		return cmd.Process.Release()
	}
}

// finish is the detached half of a Stop hook: the payload comes from the
// file the hook left; the transcript gets seconds, not a second.
func (c *HookCmd) finish(ctx context.Context) error {
	payload, err := os.ReadFile(c.Finish)
	os.Remove(c.Finish)
	if err != nil {
		return nil
	}
	_ = claudehook.Run(ctx, c.Event, bytes.NewReader(payload), os.Getenv, claudehook.Options{
		Timeout: 10 * time.Second, TranscriptWait: 6 * time.Second, NoHerdr: true,
	})
	return nil
}

// replay appends every spooled event (all agents) to the log.
func (c *HookCmd) replay(ctx context.Context, g *Globals) error {
	dir := c.Spool
	if dir == "" {
		dir = claudehook.SpoolDir(os.Getenv)
	}
	nc, err := dialNATS(g, "fleetd hook replay")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
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
	DefaultMode string   `help:"permissions.defaultMode ('-' leaves it out)." default:"default"`
	Allow       []string `help:"permissions.allow rules, e.g. 'Bash(go test:*)'." placeholder:"RULE"`
}

// Run prints or writes the settings JSON.
func (c *HooksSettingsCmd) Run() error {
	bin := c.Fleetd
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("hooks settings: find fleetd: %w", err)
		}
		if bin, err = filepath.Abs(exe); err != nil {
			return err
		}
	}
	b, err := claudehook.SettingsConfig{Fleetd: bin, DefaultMode: c.DefaultMode, Allow: c.Allow}.JSON()
	if err != nil {
		return err
	}
	if c.Write == "" {
		_, err := os.Stdout.Write(b)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.Write), 0o755); err != nil {
		return fmt.Errorf("hooks settings: %w", err)
	}
	tmp := c.Write + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("hooks settings: %w", err)
	}
	return os.Rename(tmp, c.Write)
}
