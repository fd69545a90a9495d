package herdrbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/worktree"
)

// sandboxScript runs a sandbox ("$@") between two lines, so a spawn can
// tell a sandbox that exited at once from one still starting, and what it
// printed from the echo of the typed command, whatever the pane's own
// shell is: sh prints the lines, and the typed command holds only their
// formats (with %s, %d), never the lines themselves.
const sandboxScript = `printf '\n[fleetd] %s\n' 'the sandbox starts'; "$@"; s=$?; printf '\n[fleetd] the sandbox exited with status %d\n' "$s"; exit "$s"`

// sandboxStartLine is the line sandboxScript prints before the sandbox.
const sandboxStartLine = "[fleetd] the sandbox starts"

// sandboxExitRE finds the line sandboxScript prints.
// Compiled on first use, not as every fleetd process (each hook run) starts.
func sandboxExitRE() *regexp.Regexp { return regexps().sandboxExitRE }

// sandboxArgv is what is typed into a sandboxed agent's pane: the role's
// sandbox template filled in around the agent's command, run by sh so the
// pane says when it ends.
func (b *Bridge) sandboxArgv(sb roles.Sandbox, role roles.Role, agent string, command []string, env map[string]string, wt worktree.Worktree, cwd, mcpFile string) ([]string, error) {
	home := env["HOME"]
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	fleetd := b.cfg.Launch.Fleetd
	if fleetd == "" {
		fleetd, _ = os.Executable()
	}
	// The agent's key: its hooks need it inside, and a template binds it
	// whether there is one or not, so without one it is an empty file of
	// fleetd's (not /dev/null: bound read-only, it would break every
	// redirection to /dev/null in the sandbox).
	creds := env["FLEET_NATS_CREDS"]
	if creds == "" {
		if b.cfg.Launch.StateDir == "" {
			return nil, fmt.Errorf("%w for the sandbox's {creds}", ErrNoStateDir)
		}
		creds = filepath.Join(b.cfg.Launch.StateDir, NoCredsFile)
		if err := os.WriteFile(creds, nil, 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if mcpFile == "" {
		var err error
		if mcpFile, err = b.noMCPFile(); err != nil {
			return nil, err
		}
	}
	dir, gitDir := cwd, cwd
	if wt.Path != "" {
		dir, gitDir = wt.Path, wt.GitDir
	}
	// The agent's config home ({config}): where its kind's CLI keeps its
	// config and sessions, fleetd's hook files there read-only. A bind
	// needs its source: a directory the CLI would make itself is made
	// here (a file, ~/.claude.json, must exist).
	var config []roles.ConfigPath
	if k, err := KindOf(role.Kind); err == nil {
		if h, ok := k.(ConfigHomer); ok {
			config = h.ConfigHome(b.cfg.Launch.StateDir, agent, env)
		}
	}
	if sb.UsesConfig() {
		for _, c := range config {
			if c.Write && c.Dir {
				if err := os.MkdirAll(c.Path, 0o700); err != nil {
					return nil, fmt.Errorf("sandbox: the agent's config home: %w", err)
				}
			}
		}
	}
	argv, err := sb.Expand(roles.LaunchVars{Command: command, Env: env, Unset: role.Unsets(env), Config: config, Values: map[string]string{
		"worktree": dir, "gitdir": gitDir, "home": home, "state": b.cfg.Launch.StateDir, "spool": b.cfg.Launch.SpoolDir,
		"settings": b.cfg.Launch.Settings, "fleetd": fleetd, "creds": creds, "mcp": mcpFile, "herdr": b.client.Path(), "agent": agent, "role": role.Name,
	}})
	if err != nil {
		return nil, err
	}
	// A bind needs its source: the hooks' spool may not exist yet.
	if d := b.cfg.Launch.SpoolDir; d != "" {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("spool dir: %w", err)
		}
	}
	// The wrapper itself (sh, then bwrap or podman) runs in the pane with
	// herdr's environment, which may carry boundary variables the role
	// must not have: they are dropped before it starts, so no process of
	// the launch carries them, and the launch is marked (SandboxVar) so
	// the boundary check of the pane's processes looks at it, not at the
	// pane's shell, which keeps herdr's environment but is not the agent.
	// The template's own unsets still hold inside the sandbox.
	pre := []string{"env"}
	for _, k := range role.Unsets(env) {
		pre = append(pre, "-u", k)
	}
	pre = append(pre, SandboxVar+"="+sb.Name)
	return append(append(pre, "sh", "-c", sandboxScript, "fleetd-sandbox"), argv...), nil
}

// NoCredsFile is the empty file, in fleetd's state directory, a sandbox
// binds as {creds} for an agent without a NATS key of its own.
const NoCredsFile = "no-nats-key"

// SandboxVar names the sandbox a process of a sandboxed agent's launch
// runs in: set on the wrapper fleetd types, so inherited by the sandbox
// program and, unless the sandbox clears the environment, by the agent.
const SandboxVar = "FLEET_SANDBOX"

// sandboxedEnvs keeps the environments of a sandboxed launch's processes
// (SandboxVar set): in a sandboxed agent's pane the others are its shell,
// which holds herdr's own environment and runs no agent.
func sandboxedEnvs(envs []map[string]string) []map[string]string {
	var out []map[string]string
	for _, env := range envs {
		if env[SandboxVar] != "" {
			out = append(out, env)
		}
	}
	return out
}

// awaitSandbox watches a sandboxed agent's pane once its launch is typed.
// It returns nil as soon as the agent's hooks report its session started
// (they reach the fleet from inside the sandbox), or — for a kind whose
// session starts only with its first prompt, so whose hooks say nothing
// before — its empty composer is on screen (Codex, OpenCode: not
// SandboxStartWait later), or, when neither has come
// after SandboxStartWait, nil too: the sandbox runs, its agent is slow or
// cannot reach NATS yet, and the roster will tell. It returns an error
// wrapping ErrSandboxExited when the pane shows the sandbox ended first,
// with what it printed.
func (b *Bridge) awaitSandbox(ctx context.Context, agent, pane string, after uint64, kind Kind) error {
	subject, err := events.AgentSubject(agent, "session")
	if err != nil {
		return err
	}
	deadline := time.NewTimer(b.cfg.SandboxStartWait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if seq, err := b.cfg.Log.LastSeq(ctx, subject); err == nil && seq > after {
			return nil
		}
		r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		switch {
		case errors.Is(err, herdrapi.ErrPaneNotFound):
			return fmt.Errorf("%w: its pane %s closed", ErrSandboxExited, pane)
		case err == nil:
			if kind.LazySession() && kind.ParseComposer(r.Text).Empty() {
				return nil
			}
			if m := sandboxExitRE().FindStringSubmatchIndex(r.Text); m != nil {
				said := r.Text[:m[0]]
				if i := strings.LastIndex(said, sandboxStartLine); i >= 0 {
					said = said[i+len(sandboxStartLine):]
				}
				return fmt.Errorf("%w with status %s: %s", ErrSandboxExited, r.Text[m[2]:m[3]], sandboxSaid(said))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			b.log.Warn("sandbox started, its agent's session not reported yet", "agent", agent, "pane", pane, "after", b.cfg.SandboxStartWait)
			return nil
		case <-tick.C:
		}
	}
}

// sandboxSaid is the last lines a sandbox printed before it ended (the
// screen between the start and exit lines, or above the exit line
// without the typed line — the launcher that runs the command — when the
// start line has scrolled away), for the error.
// A message longer than the pane is wide fills its rows to the full width
// and goes on in the next: such rows are joined back, so a path in it
// reads whole.
func sandboxSaid(screen string) string {
	rows := strings.Split(screen, "\n")
	width := 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r))
	}
	var said []string
	joined := ""
	for i, r := range rows {
		joined += r
		if width >= minWrapWidth && utf8.RuneCountInString(r) == width && i < len(rows)-1 {
			continue // wrapped on into the next row
		}
		if line := strings.TrimSpace(joined); line != "" && !strings.Contains(line, "fleetd-sandbox") && !strings.Contains(line, launcherMark) {
			said = append(said, line)
		}
		joined = ""
	}
	said = said[max(0, len(said)-8):]
	if len(said) == 0 {
		return "(it printed nothing)"
	}
	return strings.Join(said, " | ")
}

// minWrapWidth is the narrowest screen whose full rows are taken for
// wrapped ones: narrower, a row that fills it is more likely whole.
const minWrapWidth = 40
