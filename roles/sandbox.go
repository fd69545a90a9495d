package roles

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ErrSandbox means a sandbox launch template cannot be used: it lacks
// the {command} word, names a placeholder fleetd does not fill, or needs
// a value that is not known for this spawn.
var ErrSandbox = errors.New("sandbox")

// Sandbox is a launch template that wraps an agent's command: a
// bubblewrap profile, a container run, anything that ends by running the
// agent in the pane's terminal. It is the role's reference, never built
// or provisioned by fleetd: the image, the profile's tools and the home
// inside are the sandbox owner's. fleetd fills in only what it owns (the
// placeholders below) and types the result into the agent's pane.
//
// Placeholders: {command} — a word of its own, required — is the agent's
// command (the role's, filled in); {env} — a word of its own — passes the
// guarded environment, each variable as Env says, and drops each
// subscription-boundary variable the agent must not carry as Unset says;
// {config} — a word of its own — binds the agent's own config home: each
// path its kind's CLI keeps its config and state in (Claude Code's
// ~/.claude and ~/.claude.json, a Codex agent's CODEX_HOME, …), writable
// as Bind says, and the files of fleetd's integration in it (hooks,
// plugin, extension) read-only as ROBind says, so one template serves
// every kind. Within any word: {worktree} the agent's worktree (its working
// directory when the role has none), {gitdir} the repository's git
// directory (the worktree when there is none), {home} the agent's HOME,
// {state} fleetd's state directory, {spool} the hooks' spool, {settings}
// the hooks settings file, {fleetd} the fleetd executable the hooks run,
// {creds} the agent's own NATS key file (FLEET_NATS_CREDS; an empty file
// when it has none, so a bind of it is always valid), {mcp} the agent's
// MCP config for `fleetd mcp` (an inbox role's claude gets it with
// --mcp-config; an empty file for any other agent), {herdr} this host's
// herdr socket, {agent} and {role} the names, and {image} the sandbox's
// Image.
type Sandbox struct {
	Name string `json:"-"`
	// Description tells a reader what the sandbox isolates.
	Description string `json:"description,omitempty"`
	// Launch is the template, one argv word per element.
	Launch []string `json:"launch"`
	// Image is the container image (or any reference) {image} stands for.
	Image string `json:"image,omitempty"`
	// Env is how {env} passes one variable of the guarded environment:
	// words with {name} and {value}, e.g. ["--env", "{name}"] for podman
	// (which then takes the value from the pane's environment, so no
	// secret is on the command line). Empty: not passed, because the
	// sandbox inherits the pane's environment (bubblewrap does).
	Env []string `json:"env,omitempty"`
	// Unset is how {env} removes a variable the agent must not carry
	// (the boundary variables a clean role, or a gateway role's other
	// providers, could inherit from herdr's environment): words with
	// {name}, e.g. ["--unsetenv", "{name}"]. Empty: nothing to remove,
	// because the sandbox starts from an empty environment.
	Unset []string `json:"unset,omitempty"`
	// Bind is how {config} makes one path of the agent's config home
	// writable inside: words with {path}, e.g. ["--bind", "{path}",
	// "{path}"]; ROBind how it makes one read-only, e.g. ["--ro-bind",
	// "{path}", "{path}"]. Both are needed when the template uses
	// {config}.
	Bind   []string `json:"bind,omitempty"`
	ROBind []string `json:"ro_bind,omitempty"`
}

// ConfigPath is one path of an agent's config home, for {config}.
type ConfigPath struct {
	Path string
	// Write: the CLI writes there (its sessions, rollouts, logs, its own
	// settings); else it only reads it (fleetd's hooks, plugin or
	// extension, inside a writable directory: bound after the writable
	// paths, so it stays read-only, and the agent cannot unhook itself).
	Write bool
	// Dir: a directory, which fleetd makes when it is missing (a bind
	// needs its source); a file must exist.
	Dir bool
}

// Placeholders a template may use within a word.
var wordPlaceholders = []string{"{worktree}", "{gitdir}", "{home}", "{state}", "{spool}", "{settings}", "{fleetd}", "{creds}", "{mcp}", "{herdr}", "{agent}", "{role}", "{image}"}

// Placeholders that stand for whole words.
const (
	CommandPlaceholder = "{command}"
	EnvPlaceholder     = "{env}"
	ConfigPlaceholder  = "{config}"
)

// Compiled on first use, not as every fleetd process (each hook run) starts.
var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{[a-z]+\}`) })

// Bwrap is the sandbox fleetd ships, named "bwrap" unless the roles file
// defines its own: bubblewrap with everything read-only but the agent's
// worktree (and the repository's git directory, so the agent can
// commit), its config home ({config}: Claude Code's ~/.claude and
// ~/.claude.json, another kind's own directory in fleetd's state
// directory, fleetd's hook files there read-only) and the hooks' spool;
// a private /tmp; fleetd's state directory hidden (the NATS store, keys,
// other agents' worktrees and config homes) but for the hooks settings,
// the spool and the agent's own NATS key, which its hooks need; herdr's
// socket masked, so the agent cannot type into other panes; the boundary
// variables it must not carry removed. It shares the host's network (the
// hooks reach NATS on loopback) and process view is its own.
var Bwrap = Sandbox{
	Name:        "bwrap",
	Description: "bubblewrap: all read-only but the agent's worktree, git dir, config home and spool; private /tmp; fleetd's state and herdr's socket hidden",
	Launch: []string{
		"bwrap",
		"--die-with-parent", // the sandbox ends with its pane
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--ro-bind", "/", "/", // everything read-only…
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp", // a private /tmp: no host sockets or files from there
		"--tmpfs", "{state}", // fleetd's state (NATS store, keys, other worktrees) hidden
		"--bind", "{worktree}", "{worktree}", // …but the agent's worktree
		"--bind", "{gitdir}", "{gitdir}", // and the git dir its commits go to
		"{config}",                     // the agent's config home: Claude Code's ~/.claude, a Codex agent's CODEX_HOME, …
		"--bind", "{spool}", "{spool}", // where the hooks spool when NATS is away
		"--ro-bind", "{settings}", "{settings}",
		"--ro-bind", "{fleetd}", "{fleetd}",
		"--ro-bind", "{creds}", "{creds}", // the agent's own key, even when fleetd auth keeps it in the state dir
		"--ro-bind", "{mcp}", "{mcp}", // a main's config for fleetd mcp, in the hidden state dir too
		"--ro-bind", "/dev/null", "{herdr}", // no typing into other panes
		"--chdir", "{worktree}",
		"{env}",
		"--",
		"{command}",
	},
	Unset:  []string{"--unsetenv", "{name}"},
	Bind:   []string{"--bind", "{path}", "{path}"},
	ROBind: []string{"--ro-bind", "{path}", "{path}"},
}

// builtinSandboxes are the sandboxes a roles file may name without
// defining them.
func builtinSandboxes() map[string]Sandbox { return map[string]Sandbox{Bwrap.Name: Bwrap} }

// Validate reports every problem with the template at once.
func (s Sandbox) Validate() error {
	var errs []error
	if len(s.Launch) == 0 || s.Launch[0] == "" || strings.HasPrefix(s.Launch[0], "{") {
		errs = append(errs, fmt.Errorf("%w %q: launch must start with the sandbox's program", ErrSandbox, s.Name))
	}
	commands := 0
	for _, w := range s.Launch {
		switch w {
		case CommandPlaceholder:
			commands++
			continue
		case EnvPlaceholder, ConfigPlaceholder:
			continue
		}
		for _, p := range placeholderRE().FindAllString(w, -1) {
			switch {
			case p == CommandPlaceholder || p == EnvPlaceholder || p == ConfigPlaceholder:
				errs = append(errs, fmt.Errorf("%w %q: %s must be a word of its own, not part of %q", ErrSandbox, s.Name, p, w))
			case !slices.Contains(wordPlaceholders, p):
				errs = append(errs, fmt.Errorf("%w %q: unknown placeholder %s in %q (known: %s, %s, %s)", ErrSandbox, s.Name, p, w,
					CommandPlaceholder, EnvPlaceholder, strings.Join(wordPlaceholders, ", ")))
			case p == "{image}" && s.Image == "":
				errs = append(errs, fmt.Errorf("%w %q: uses {image} but sets no image", ErrSandbox, s.Name))
			}
		}
	}
	if commands != 1 {
		errs = append(errs, fmt.Errorf("%w %q: the template must hold the word %s exactly once (it has it %d times): it is where the agent's command goes", ErrSandbox, s.Name, CommandPlaceholder, commands))
	}
	for _, p := range []string{EnvPlaceholder, ConfigPlaceholder} {
		if n := countWord(s.Launch, p); n > 1 {
			errs = append(errs, fmt.Errorf("%w %q: %s more than once", ErrSandbox, s.Name, p))
		}
	}
	if s.UsesConfig() && (len(s.Bind) == 0 || len(s.ROBind) == 0) {
		errs = append(errs, fmt.Errorf("%w %q: uses %s but does not say how to bind a path (bind and ro_bind, e.g. [\"--bind\", \"{path}\", \"{path}\"])", ErrSandbox, s.Name, ConfigPlaceholder))
	}
	for field, words := range map[string][]string{"env": s.Env, "unset": s.Unset, "bind": s.Bind, "ro_bind": s.ROBind} {
		joined := strings.Join(words, " ")
		want := "{name}"
		if field == "bind" || field == "ro_bind" {
			want = "{path}"
		}
		if len(words) > 0 && !strings.Contains(joined, want) {
			errs = append(errs, fmt.Errorf("%w %q: %s %q names no %s", ErrSandbox, s.Name, field, joined, want))
		}
		for _, p := range placeholderRE().FindAllString(joined, -1) {
			if p != want && (p != "{value}" || field != "env") {
				errs = append(errs, fmt.Errorf("%w %q: %s uses %s (env may use {name} and {value}, unset {name}, bind and ro_bind {path})", ErrSandbox, s.Name, field, p))
			}
		}
	}
	return errors.Join(errs...)
}

// UsesConfig reports whether the template binds the agent's config home
// ({config}): every kind but Claude Code keeps it in fleetd's state
// directory, which a sandbox may hide ({state}), so without it only a
// template that binds ~/.claude itself can run an agent.
func (s Sandbox) UsesConfig() bool { return countWord(s.Launch, ConfigPlaceholder) > 0 }

func countWord(words []string, w string) int {
	n := 0
	for _, x := range words {
		if x == w {
			n++
		}
	}
	return n
}

// LaunchVars are the values fleetd fills into a sandbox template for one
// spawn.
type LaunchVars struct {
	// Command is the agent's command, its placeholders filled.
	Command []string
	// Env is the guarded environment the agent launches with (FLEET_*,
	// the role's env, a gateway role's ANTHROPIC_BASE_URL); Unset the
	// boundary variables it must not carry.
	Env   map[string]string
	Unset []string
	// Config is the agent's config home, for {config}.
	Config []ConfigPath
	// The values of the word placeholders, by name without braces:
	// worktree, gitdir, home, state, spool, settings, fleetd, creds, mcp,
	// herdr, agent, role.
	Values map[string]string
}

// Expand fills the template for one spawn and returns the argv to run.
// A placeholder the template uses whose value is not known is an error
// (ErrSandbox): a sandbox never starts with half its binds.
func (s Sandbox) Expand(v LaunchVars) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(v.Command) == 0 {
		return nil, fmt.Errorf("%w %q: no command to run", ErrSandbox, s.Name)
	}
	values := map[string]string{"{image}": s.Image}
	for k, val := range v.Values {
		values["{"+k+"}"] = val
	}
	var out []string
	for _, w := range s.Launch {
		switch w {
		case CommandPlaceholder:
			out = append(out, v.Command...)
			continue
		case EnvPlaceholder:
			for _, k := range slices.Sorted(maps.Keys(v.Env)) {
				out = append(out, fill(s.Env, k, v.Env[k])...)
			}
			for _, k := range v.Unset {
				out = append(out, fill(s.Unset, k, "")...)
			}
			continue
		case ConfigPlaceholder:
			// The writable paths first: a read-only one inside a
			// writable directory is bound over it.
			for _, write := range []bool{true, false} {
				for _, c := range v.Config {
					if c.Write != write {
						continue
					}
					if !filepath.IsAbs(c.Path) {
						return nil, fmt.Errorf("%w %q: the agent's config path %q is not absolute", ErrSandbox, s.Name, c.Path)
					}
					pattern := s.ROBind
					if write {
						pattern = s.Bind
					}
					for _, w := range pattern {
						out = append(out, strings.ReplaceAll(w, "{path}", c.Path))
					}
				}
			}
			continue
		}
		var missing error
		w = placeholderRE().ReplaceAllStringFunc(w, func(p string) string {
			val := values[p]
			if val == "" && missing == nil {
				missing = fmt.Errorf("%w %q: %s has no value for this spawn", ErrSandbox, s.Name, p)
			}
			return val
		})
		if missing != nil {
			return nil, missing
		}
		out = append(out, w)
	}
	return out, nil
}

// fill is one variable's words of an Env or Unset pattern.
func fill(pattern []string, name, value string) []string {
	out := make([]string, len(pattern))
	for i, w := range pattern {
		out[i] = strings.NewReplacer("{name}", name, "{value}", value).Replace(w)
	}
	return out
}

// Unsets lists Claude Code's boundary variables (BoundaryVars) a pane
// launched with env must not carry: Role.Unsets of a Claude Code role.
func Unsets(env map[string]string) []string { return Role{Kind: KindClaude}.Unsets(env) }

// Unsets lists the boundary variables of the role's kind a pane launched
// with env must not carry: all of them but those env sets, which CheckEnv
// has allowed. A sandbox drops them, so none reaches the agent from
// herdr's own environment either.
func (r Role) Unsets(env map[string]string) []string {
	return slices.DeleteFunc(slices.Clone(r.spec().boundary), func(k string) bool {
		_, set := env[k]
		return set
	})
}
