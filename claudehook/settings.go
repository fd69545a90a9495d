package claudehook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ThisFleetd is the fleetd hooks run when no other is named: this
// process's executable, as an absolute path, so a hook does not depend on
// the pane's PATH.
func ThisFleetd() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("hooks settings: find fleetd: %w", err)
	}
	return filepath.Abs(exe)
}

// HookName is the file name of the small hook binary, cmd/fleetd-hook.
const HookName = "fleetd-hook"

// HookBeside is the hook binary next to the fleetd executable fleetd
// (where `go build -o bin/ ./cmd/...` or `go install ./cmd/...` put
// both), or "" when there is no executable file of that name there.
func HookBeside(fleetd string) string {
	if fleetd == "" {
		return ""
	}
	path := filepath.Join(filepath.Dir(fleetd), HookName)
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return path
}

// SettingsConfig describes the `claude --settings` file of a fleetd pane.
type SettingsConfig struct {
	// Fleetd is the fleetd executable the hooks run (an absolute path, so
	// the hook does not depend on the pane's PATH). Required.
	Fleetd string
	// Hook is the small hook binary (cmd/fleetd-hook) the hooks run
	// instead: it starts several times faster than the whole of fleetd,
	// and Claude Code waits for two hooks a turn. Default HookBeside(Fleetd);
	// "-" or none found: `fleetd hook`.
	Hook string
	// Timeout is Claude's own limit on each hook, in seconds. Default 10.
	Timeout int
	// DefaultMode is permissions.defaultMode. Default "default": with
	// non-essential traffic off, Claude Code 2.1.328's "auto" mode makes
	// every non-read-only tool wait for a person, which stalls a headless
	// worker; "default" lets Allow rules decide. "-" leaves it out.
	DefaultMode string
	// Allow are permissions.allow rules, e.g. "Bash(go test:*)".
	Allow []string
}

func (c *SettingsConfig) setDefaults() {
	switch c.Hook {
	case "":
		c.Hook = HookBeside(c.Fleetd)
	case "-":
		c.Hook = ""
	}
	if c.Timeout == 0 {
		c.Timeout = 10
	}
	if c.DefaultMode == "" {
		c.DefaultMode = "default"
	}
}

// Validate reports every problem with the config at once.
func (c SettingsConfig) Validate() error {
	var errs []error
	if c.Fleetd == "" {
		errs = append(errs, errors.New("claudehook settings: Fleetd path is required"))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("claudehook settings: timeout %d must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

// JSON renders the settings file: one command hook per Hook running
// "<fleetd> hook <event>" — or, with a Hook binary, "<hook> <event>" when
// that file is there when the hook runs and `fleetd hook` otherwise (a
// sandbox that binds only fleetd, a hook binary removed since) — and the
// permissions block. UserPromptSubmit runs async; Stop, StopFailure and
// Notification run with --after-prompt, to append after it.
func (c SettingsConfig) JSON() ([]byte, error) {
	c.setDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	type command struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
		Async   bool   `json:"async,omitempty"`
	}
	type matcher struct {
		Hooks []command `json:"hooks"`
	}
	type permissions struct {
		DefaultMode string   `json:"defaultMode,omitempty"`
		Allow       []string `json:"allow,omitempty"`
	}
	out := struct {
		Hooks       map[string][]matcher `json:"hooks"`
		Permissions *permissions         `json:"permissions,omitempty"`
	}{Hooks: map[string][]matcher{}}
	for _, h := range Hooks {
		cmd := command{Type: "command", Command: c.command(h.Arg()), Timeout: c.Timeout}
		switch h {
		case UserPromptSubmit:
			// Claude Code does not wait for it: the prompt goes to the
			// model a hook's run sooner. The hooks after it in a turn
			// wait for it instead, before they append (order.go).
			cmd.Async = true
		case Stop, StopFailure, Notification:
			cmd.Command = c.command(h.Arg() + " --after-prompt")
		}
		out.Hooks[string(h)] = []matcher{{Hooks: []command{cmd}}}
	}
	mode := c.DefaultMode
	if mode == "-" {
		mode = ""
	}
	if mode != "" || len(c.Allow) > 0 {
		out.Permissions = &permissions{DefaultMode: mode, Allow: c.Allow}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Command is the shell command that runs fleetd's hook arg ("stop",
// "user-prompt-submit"), as the settings file runs it: for another kind
// whose hooks fleetd writes per agent (Codex's hooks.json).
func (c SettingsConfig) Command(arg string) string {
	c.setDefaults()
	return c.command(arg)
}

func (c SettingsConfig) command(arg string) string {
	cmd := shellWord(c.Fleetd) + " hook " + arg
	if c.Hook != "" {
		// Claude runs the command with sh; test is a builtin, so the
		// fallback costs no process.
		cmd = "test -x " + shellWord(c.Hook) + " && exec " + shellWord(c.Hook) + " " + arg + " || exec " + cmd
	}
	return cmd
}

// shellWord quotes s for sh when it holds anything but safe characters
// (Claude runs hook commands through a shell).
func shellWord(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,@%=", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteFile writes the settings file to path (mode 0600; a directory it
// creates, 0700: it sits in fleetd's state directory); it replaces an
// existing file in one rename, so a pane starting at that moment reads
// the old file or the new one, never half of one.
func (c SettingsConfig) WriteFile(path string) error {
	b, err := c.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("hooks settings: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("hooks settings: %w", err)
	}
	return os.Rename(tmp, path)
}
