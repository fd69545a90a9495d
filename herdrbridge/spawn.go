package herdrbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/worktree"
)

// SpawnRequest asks for a new agent in a new pane of this host's herdr.
type SpawnRequest struct {
	// Role names the role in the roles file: command, model, env class.
	Role string
	// Name is the agent id (fleet-wide unique, a subject token).
	Name string
	// Model overrides the role's model.
	Model string
	// Cwd is the pane's working directory; default herdr's.
	Cwd string
	// Env is extra environment for the pane, checked against the role's
	// subscription boundary together with everything else.
	Env map[string]string
	// Parent is the agent (or job) this one works for.
	Parent string
	// Tier is the agent's depth; 0 means the role's tier.
	Tier int
	// Session is the named session the agent serves.
	Session string
	// Resume is the Claude Code session id to continue (a resumed named
	// session): the role's command gets "--resume <id>" in place of its
	// {resume} word, or appended to a claude command. A role whose command
	// can do neither is refused (ErrNoResume). Empty starts fresh.
	Resume string
	// SplitFrom, when set, splits that pane (to the right) instead of
	// opening a new tab; Workspace picks the tab's workspace (default:
	// the active one, or a new workspace when there is none).
	SplitFrom string
	Workspace string

	// Wait, when set, makes Spawn return only once the agent's Claude Code
	// session has started (its SessionStart hook reported), and fail with
	// ErrNotStarted — what the pane shows, everything cleaned up — when
	// its command exits first or Wait passes. Zero returns once the
	// command is typed.
	Wait time.Duration

	// restart: the gateway brings back its own agent that died; its
	// registration on this host may still be live, and is replaced.
	restart bool
}

// Spawn starts an agent: it validates the id and the role, builds the
// pane's environment (FLEET_* variables, the role's launch env, the
// request's env), refuses an environment that crosses the role's
// subscription boundary before touching herdr (an error wrapping
// roles.ErrBoundary), creates or reuses the agent's git worktree when its
// role gives it one (refusing a missing repo or a dirty base), creates
// the pane there with that env, registers the agent (Origin "spawned")
// while the pane holds only its shell, and then types the role's command
// (with --resume when req.Resume is set) into it — wrapped in the role's
// sandbox when it names one, whose start it then watches: a sandbox that
// exits before its agent reports in fails the spawn (ErrSandboxExited).
// So the agent's hooks never write before its registration, parallel
// spawns never race, and a failed spawn leaves nothing live behind: no
// pane, no worktree it created, and a launch that fails after the
// registration is recorded as exited. Spawn does not need Run: the CLI
// calls it on a bridge that is not running, and a running bridge picks
// the agent up from the log.
func (b *Bridge) Spawn(ctx context.Context, req SpawnRequest) (events.AgentRegistered, error) {
	if err := events.ValidAgentID(req.Name); err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn: %w", err)
	}
	role, err := b.cfg.Roles.Get(req.Role)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w", req.Name, err)
	}
	// The request's words reach the launch: refused here with what is
	// wrong, before anything starts (and the launch's every word is
	// checked again before it is typed).
	if err := roles.CheckWord("model", req.Model); err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w", req.Name, err)
	}
	if req.Resume != "" {
		if err := events.ValidSessionID(req.Resume); err != nil {
			return events.AgentRegistered{}, fmt.Errorf("spawn %s resuming: %w", req.Name, err)
		}
	}
	if req.Cwd != "" && role.Worktree == nil {
		// A restart comes back where its registration says the agent
		// worked, which a spawn checked or herdr chose.
		check := role.CheckCwd
		if req.restart {
			check = func(cwd string) error { return roles.CheckWord("cwd", cwd) }
		}
		if err := check(req.Cwd); err != nil {
			return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w", req.Name, err)
		}
	}
	if req.Model != "" {
		role = withModel(role, req.Model)
	}
	kind, err := KindOf(role.Kind)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: role %q: %w", req.Name, role.Name, err)
	}
	if l := b.cfg.Launch; l.AgentCreds != nil && l.AgentCreds(req.Name) == "" {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s refused: %w (list it for host %s in 'fleetd auth' and reload the servers)", req.Name, ErrNoCredentials, b.cfg.Host)
	}
	env := b.launchEnv(req.Name, role, req.Env)
	if err := role.CheckEnv(env); err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s refused: %w", req.Name, err)
	}
	argv, ok := role.ResumeArgv(b.cfg.Launch.Settings, req.Resume)
	if !ok {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s resuming %s: %w: role %q (add %s to its command)", req.Name, req.Resume, ErrNoResume, role.Name, roles.ResumePlaceholder)
	}
	if len(argv) == 0 || argv[0] == "" {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: role %q has no command", req.Name, role.Name)
	}
	var sandbox roles.Sandbox
	if role.Sandbox != "" {
		if sandbox, err = b.cfg.Roles.Sandbox(role.Sandbox); err == nil {
			err = sandbox.Validate()
		}
		if err != nil {
			return events.AgentRegistered{}, fmt.Errorf("spawn %s: role %q: %w", req.Name, role.Name, err)
		}
	}
	if role.Worktree != nil {
		switch {
		case req.Cwd != "":
			return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w: role %q works in its own worktree of %s: it takes no working directory (%s)", req.Name, roles.ErrCwd, role.Name, role.Worktree.Repo, req.Cwd)
		case b.cfg.Launch.StateDir == "":
			return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w for role %q's worktrees", req.Name, ErrNoStateDir, role.Name)
		}
	}
	hist, err := b.history(ctx, req.Name)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w", req.Name, err)
	}
	if hist.live() && !(req.restart && hist.reg.Host == b.cfg.Host) {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w (host %s, pane %s)", req.Name, ErrAgentExists, hist.reg.Host, hist.reg.Pane)
	}

	wt, err := b.ensureWorktree(ctx, role, req)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w", req.Name, err)
	}
	if wt.Path != "" {
		req.Cwd = wt.Path
		env["FLEET_WORKTREE"], env["FLEET_WORKTREE_BASE"] = wt.Path, wt.Base
	}
	pane, err := b.createPane(ctx, req, env)
	if err != nil {
		b.undoWorktree(ctx, wt)
		return events.AgentRegistered{}, fmt.Errorf("spawn %s: %w", req.Name, err)
	}
	closePane := func(cause error) error {
		if cerr := b.client.ClosePane(context.WithoutCancel(ctx), pane.PaneID); cerr != nil {
			cause = errors.Join(cause, fmt.Errorf("close pane %s: %w", pane.PaneID, cerr))
		}
		return fmt.Errorf("spawn %s: %w", req.Name, cause)
	}
	// exited records a launch that failed after the registration, so the
	// agent is not live and its id can be spawned again, and takes the
	// spawn back.
	exited := func(cause error) error {
		gone := b.undoWorktree(ctx, wt)
		if _, xerr := b.append(context.WithoutCancel(ctx), req.Name, "", events.AgentExited{Pane: pane.PaneID, Reason: "spawn failed: " + cause.Error(), Worktree: gone, StartFailed: true}); xerr != nil {
			cause = errors.Join(cause, fmt.Errorf("record the failed spawn: %w", xerr))
		}
		return closePane(cause)
	}
	tier := req.Tier
	if tier == 0 {
		tier = role.Tier
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = pane.CWD
	}
	// A main reaches the fleet through `fleetd mcp`: its claude gets the
	// config (and a sandbox binds it as {mcp}); another kind's Install
	// writes the server into that agent's own configuration.
	mcpFile, err := b.mcpConfig(req.Name, role, argv)
	if err != nil {
		b.undoWorktree(ctx, wt)
		return events.AgentRegistered{}, closePane(err)
	}
	if mcpFile != "" {
		argv = append(argv, "--mcp-config", mcpFile)
	}
	if err := kind.Install(Install{StateDir: b.cfg.Launch.StateDir, Agent: req.Name, Cwd: cwd, Role: role, HookCommand: b.cfg.Launch.HookCommand,
		MCP: b.mcpServer(req.Name, role)}); err != nil {
		b.undoWorktree(ctx, wt)
		return events.AgentRegistered{}, closePane(fmt.Errorf("install %s's integration: %w", role.Kind, err))
	}
	if role.Sandbox != "" {
		if argv, err = b.sandboxArgv(sandbox, role, req.Name, argv, env, wt, cwd, mcpFile); err != nil {
			b.undoWorktree(ctx, wt)
			return events.AgentRegistered{}, closePane(err)
		}
	}
	reg := events.AgentRegistered{
		Agent: req.Name, Host: b.cfg.Host, Pane: pane.PaneID, Role: role.Name, Tier: tier, Parent: req.Parent,
		Model: role.Model, Cwd: cwd, Session: req.Session, Origin: "spawned", EnvClass: role.EnvClass,
		Worktree: b.worktreeAtSpawn(ctx, wt), Sandbox: role.Sandbox, Kind: role.Kind,
	}
	// Register while the pane holds only its shell: the agent's hooks
	// cannot have written anything yet, so only another registration can
	// move the aggregate, and a failure here leaves no event behind.
	ack, err := b.append(ctx, req.Name, "", reg, guard(req.Name, hist.lastSeq))
	if err != nil {
		if errors.Is(err, events.ErrConcurrency) {
			err = fmt.Errorf("%w: someone registered it meanwhile: %w", ErrAgentExists, err)
		}
		b.undoWorktree(ctx, wt)
		return events.AgentRegistered{}, closePane(fmt.Errorf("register: %w", err))
	}
	line, launcher, err := b.launchLine(req.Name, argv)
	if err != nil {
		return events.AgentRegistered{}, exited(fmt.Errorf("launch %s: %w", argv[0], err))
	}
	if err := b.client.SendInput(ctx, pane.PaneID, line, "enter"); err != nil {
		if launcher != "" {
			os.Remove(launcher)
		}
		return events.AgentRegistered{}, exited(fmt.Errorf("launch %s: %w", argv[0], err))
	}
	if role.Sandbox != "" {
		if err := b.awaitSandbox(ctx, req.Name, pane.PaneID, ack.Seq, kind); err != nil {
			return events.AgentRegistered{}, exited(fmt.Errorf("sandbox %s: %w", role.Sandbox, err))
		}
	}
	wait := req.Wait
	if wait == 0 && kind.LazySession() {
		// Nothing but its screen will say such an agent is ready before
		// its first prompt: see it, and say so (awaitStart).
		wait = b.cfg.StartupGrace
	}
	if wait > 0 {
		if err := b.awaitStart(ctx, req.Name, pane.PaneID, ack.Seq, wait, kind); err != nil {
			return events.AgentRegistered{}, exited(err)
		}
	}
	b.log.Info("spawned", "agent", req.Name, "role", role.Name, "pane", pane.PaneID, "worktree", wt.Path, "sandbox", role.Sandbox)
	return reg, nil
}

// awaitStart watches a spawned agent until its Claude Code session has
// started: a session event after its registration (seq after) that says
// started. It fails (ErrNotStarted) when the pane closes, when the pane's
// shell is back in the foreground after the command ran or LaunchGrace
// after it was typed (the command exited: not found, a crash on start), when a gateway
// recorded the process dead, or when wait passes — each time with the
// last lines the pane shows.
func (b *Bridge) awaitStart(ctx context.Context, agent, pane string, after uint64, wait time.Duration, kind Kind) error {
	subject, err := events.AgentSubject(agent, "session")
	if err != nil {
		return err
	}
	launch := launchWatch{began: b.cfg.Now()}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	shows := func() string {
		r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return "(the pane cannot be read: " + err.Error() + ")"
		}
		if s := lastRows(r.Text, 4); s != "" {
			return s
		}
		return "(nothing)"
	}
	for {
		if seq, err := b.cfg.Log.LastSeq(ctx, subject); err == nil && seq > after {
			for ev, err := range b.cfg.Log.Read(ctx, events.Query{Subjects: []string{subject}, FromSeq: after + 1}) {
				if err != nil {
					break
				}
				if d, ok := ev.Data.(events.AgentSession); ok {
					switch {
					case d.State == "started":
						return nil
					case d.Reason == SessionEndDied:
						return fmt.Errorf("%w: its command exited before its session started; the pane shows: %s", ErrNotStarted, shows())
					}
				}
			}
		}
		if kind.LazySession() {
			// No session before the first prompt: its composer on
			// screen is the sign that it started.
			if r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible}); err == nil && kind.ParseComposer(r.Text).Empty() {
				// Its status, until its hooks or herdr tell one: the
				// router gives role turns only to an agent known idle.
				_, err := b.append(ctx, agent, "", events.AgentStatusChanged{Status: events.StatusIdle, Source: StatusSourceScreen})
				return err
			}
		}
		if _, err := b.client.Pane(ctx, pane); errors.Is(err, herdrapi.ErrPaneNotFound) {
			return fmt.Errorf("%w: its pane %s closed", ErrNotStarted, pane)
		}
		if shell, known := b.roots.showsShell(b.cfg.ProcRoot, b.client.Path(), pane); shell && launch.exited(shell, known, b.cfg.Now()) {
			return fmt.Errorf("%w: its command exited and the shell is back; the pane shows: %s", ErrNotStarted, shows())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w: no %s session started within %s (are fleetd's hooks in its settings?); the pane shows: %s", ErrNotStarted, kind.Name(), wait, shows())
		case <-tick.C:
		}
	}
}

// ensureWorktree creates or reuses the agent's worktree when its role
// gives it one: named after the agent, or after its named session, so a
// session's next agent (a resume) continues in the same checkout.
func (b *Bridge) ensureWorktree(ctx context.Context, role roles.Role, req SpawnRequest) (worktree.Worktree, error) {
	if role.Worktree == nil {
		return worktree.Worktree{}, nil
	}
	name := req.Name
	if req.Session != "" {
		name = req.Session
	}
	return worktree.Ensure(ctx, worktree.Spec{Repo: role.Worktree.Repo, Base: role.Worktree.Base,
		Dir: filepath.Join(b.cfg.Launch.StateDir, "worktrees"), Name: name})
}

// worktreeAtSpawn is the worktree as a registration records it: where,
// and where its branch stands (a reused one may hold earlier work).
func (b *Bridge) worktreeAtSpawn(ctx context.Context, wt worktree.Worktree) events.Worktree {
	if wt.Path == "" {
		return events.Worktree{}
	}
	w := events.Worktree{Repo: wt.Repo, Path: wt.Path, Branch: wt.Branch, Base: wt.Base}
	if st, err := worktree.Inspect(ctx, wt.Path, wt.Base); err == nil {
		w.Head, w.Dirty, w.Ahead = st.Head, st.Dirty, st.Ahead
	}
	return w
}

// launchEnv is the pane environment of a spawned agent: what its hooks need
// to reach the fleet, the role's env, then the caller's.
func (b *Bridge) launchEnv(agent string, role roles.Role, extra map[string]string) map[string]string {
	env := map[string]string{
		"FLEET_AGENT_ID": agent,
		"FLEET_ROLE":     role.Name,
		"FLEET_HOST":     b.cfg.Host,
		"FLEET_KIND":     role.Kind,
	}
	if k, err := KindOf(role.Kind); err == nil {
		maps.Copy(env, k.LaunchEnv(b.cfg.Launch.StateDir, agent))
	}
	l := b.cfg.Launch
	creds := l.NATSCreds
	if l.AgentCreds != nil {
		creds = l.AgentCreds(agent)
	}
	token := ""
	if creds == "" && l.AgentCreds == nil {
		token = l.NATSToken
	}
	for k, v := range map[string]string{"FLEET_NATS_URL": l.NATSURL, "FLEET_NATS_HOOK_URL": hookNATSURL(l.NATSURL, net.LookupHost),
		"FLEET_NATS_CREDS": creds, "FLEET_NATS_TOKEN": token, "FLEET_URL": l.FleetURL, "FLEET_SPOOL_DIR": l.SpoolDir} {
		if v != "" {
			env[k] = v
		}
	}
	for k, v := range role.LaunchEnv() {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// hookNATSURL is urls (comma-separated, as nats.go takes them) with every
// host name resolved to its addresses, or "" when there is no name to
// resolve. The hook binary dials without package net, so it resolves
// only IP literals, localhost and /etc/hosts (internal/sockdial); a NATS
// named by DNS would send every hook event to the spool. Resolved once
// at launch, as the pane's environment is fixed then anyway.
func hookNATSURL(urls string, lookup func(string) ([]string, error)) string {
	var out []string
	named := false
	for raw := range strings.SplitSeq(urls, ",") {
		raw = strings.TrimSpace(raw)
		full := raw
		if !strings.Contains(full, "://") {
			full = "nats://" + full
		}
		u, err := url.Parse(full)
		if err != nil || u.Hostname() == "" || u.Hostname() == "localhost" {
			out = append(out, raw)
			continue
		}
		if _, err := netip.ParseAddr(u.Hostname()); err == nil {
			out = append(out, raw)
			continue
		}
		addrs, err := lookup(u.Hostname())
		if err != nil || len(addrs) == 0 {
			out = append(out, raw) // the hook will say it cannot resolve it, and spool
			continue
		}
		named = true
		port := u.Port()
		if port == "" {
			port = "4222"
		}
		for _, a := range addrs {
			r := *u
			r.Host = net.JoinHostPort(a, port)
			out = append(out, r.String())
		}
	}
	if !named {
		return ""
	}
	return strings.Join(out, ",")
}

// withModel makes the role launch model instead of its own. A command
// of the role's kind's own CLI (claude, codex) without a {model}
// placeholder gets --model appended.
func withModel(r roles.Role, model string) roles.Role {
	r.Model = model
	if !strings.Contains(strings.Join(r.Command, "\x00"), "{model}") &&
		len(r.Command) > 0 && filepath.Base(r.Command[0]) == r.Kind { // claude and codex both take --model
		r.Command = append(append([]string(nil), r.Command...), "--model", "{model}")
	}
	return r
}

// createPane opens the agent's pane: a split of SplitFrom, or a new tab,
// or a new workspace when herdr has none yet.
func (b *Bridge) createPane(ctx context.Context, req SpawnRequest, env map[string]string) (herdrapi.PaneInfo, error) {
	if req.SplitFrom != "" {
		return b.client.Split(ctx, herdrapi.SplitRequest{Direction: herdrapi.SplitRight, TargetPaneID: req.SplitFrom, CWD: req.Cwd, Env: env})
	}
	tab, err := b.client.CreateTab(ctx, herdrapi.CreateRequest{WorkspaceID: req.Workspace, CWD: req.Cwd, Label: req.Name, Env: env})
	var apiErr *herdrapi.APIError
	if errors.As(err, &apiErr) && apiErr.Code == "no_active_workspace" && req.Workspace == "" {
		ws, err := b.client.CreateWorkspace(ctx, herdrapi.CreateRequest{CWD: req.Cwd, Label: req.Name, Env: env})
		return ws.RootPane, err
	}
	return tab.RootPane, err
}

// history is what the log says about one agent id.
type history struct {
	reg     events.AgentRegistered
	exited  bool
	lastSeq uint64
}

func (h history) live() bool { return h.reg.Agent != "" && !h.exited }

// history reads the agent's aggregate from the log.
func (b *Bridge) history(ctx context.Context, agent string) (history, error) {
	subject, err := events.AgentAll(agent)
	if err != nil {
		return history{}, err
	}
	var h history
	for ev, err := range b.cfg.Log.Read(ctx, events.Query{Subjects: []string{subject}}) {
		if err != nil {
			return history{}, err
		}
		h.lastSeq = ev.Seq
		switch d := ev.Data.(type) {
		case events.AgentRegistered:
			h.reg, h.exited = d, false
		case events.AgentExited:
			h.exited = true
		}
	}
	last, err := b.cfg.Log.LastSeq(ctx, subject)
	if err != nil {
		return history{}, err
	}
	h.lastSeq = max(h.lastSeq, last)
	return h, nil
}

// LaunchDir is where, in fleetd's state directory, a spawn writes its
// agent's launcher: the script that runs the launch command, of which
// only its path is typed into the pane.
const LaunchDir = "launch"

// launcherMark is in every launcher's name, so a sandbox's exit report
// can tell the typed line's echo from what the sandbox printed.
const launcherMark = "fleetd-launch"

// launchLine is what is typed into a new pane's shell to run argv, and
// the launcher file it runs ("" when there is none). A pane's shell is
// interactive: what is typed goes through its line editor, which acts on
// control characters wherever they are, inside quotes too. So every word
// of argv is refused when it holds one (roles.CheckWord), and the command
// itself is not typed: it goes in a launcher script in fleetd's state
// directory (0700, a file of fleetd's, not in the agent's worktree), read
// by sh as a file, where quotes are quotes, and only "/bin/sh <its path>",
// which fleetd chooses, is typed. The shell stays the pane's first process
// (not exec'd away): when the agent ends, the pane shows its shell again,
// which is how its end is seen. The launcher execs the command (the
// agent's process is in the shell's place, as if typed) after removing
// itself. Without a state directory the quoted command is typed as
// before, the words checked all the same.
func (b *Bridge) launchLine(agent string, argv []string) (line, launcher string, err error) {
	if err := roles.CheckWords("launch", argv); err != nil {
		return "", "", err
	}
	if b.cfg.Launch.StateDir == "" {
		return ShellQuote(argv), "", nil
	}
	dir := filepath.Join(b.cfg.Launch.StateDir, LaunchDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("launcher: %w", err)
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", "", fmt.Errorf("launcher: %w", err)
	}
	f, err := os.CreateTemp(dir, launcherMark+"-"+agent+"-"+hex.EncodeToString(nonce[:])+"-*.sh")
	if err != nil {
		return "", "", fmt.Errorf("launcher: %w", err)
	}
	script := "#!/bin/sh\n# fleetd's launch of agent " + agent + ", for this start only\nrm -f -- \"$0\"\nexec " + ShellQuote(argv) + "\n"
	_, err = f.WriteString(script)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o700)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", "", fmt.Errorf("launcher: %w", err)
	}
	line = ShellQuote([]string{"/bin/sh", f.Name()})
	if err := roles.CheckWord("launcher path", line); err != nil {
		os.Remove(f.Name())
		return "", "", err
	}
	return line, f.Name(), nil
}

// Compiled on first use, not as every fleetd process (each hook run) starts.
func shellSafe() *regexp.Regexp { return regexps().shellSafe }

// ShellQuote renders argv as one POSIX shell command line, single-quoting
// every word that needs it, so sh reading it runs exactly argv. Quotes
// are no defence against a line editor: typed into an interactive shell,
// a word must hold no control character (roles.CheckWord; launchLine).
func ShellQuote(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		if shellSafe().MatchString(a) {
			words[i] = a
			continue
		}
		words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}
