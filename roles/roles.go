package roles

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/samber/lo"
)

// Env classes: which side of the subscription boundary a role is on.
const (
	// EnvClean roles run on the subscription: no model endpoint override.
	EnvClean = "clean"
	// EnvGateway roles run against a model gateway: ANTHROPIC_BASE_URL is
	// required and must equal the role's BaseURL.
	EnvGateway = "gateway"
)

// BoundaryVars are the variables that move a Claude Code process off the
// subscription: another endpoint, an API key instead of the login, or
// another provider (Amazon Bedrock, Google Vertex AI, Microsoft Foundry)
// with the cloud credentials it bills to. A clean pane must carry none of
// them, whatever their value: the check is for presence, so an empty
// CLAUDE_CODE_USE_BEDROCK is refused as well. Region and profile
// variables (AWS_REGION, AWS_PROFILE, CLOUD_ML_REGION) are left out: on
// their own they switch nothing, and a developer's shell often has them.
var BoundaryVars = []string{
	// The Anthropic API instead of the subscription, or another endpoint.
	"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
	// Amazon Bedrock, and the AWS credentials it would use.
	"CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
	"AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	// Google Vertex AI, and the Google credentials it would use.
	"CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_BASE_URL",
	"CLAUDE_CODE_SKIP_VERTEX_AUTH", "GOOGLE_APPLICATION_CREDENTIALS",
	// Microsoft Foundry.
	"CLAUDE_CODE_USE_FOUNDRY", "ANTHROPIC_FOUNDRY_RESOURCE", "ANTHROPIC_FOUNDRY_BASE_URL",
	"ANTHROPIC_FOUNDRY_API_KEY", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
}

// ErrBoundary means an env crosses its role's env class.
var ErrBoundary = errors.New("subscription boundary")

// ErrNotAllowed means a role's policy does not allow what its agent
// asked for (a spawn of a role its may_spawn does not name).
var ErrNotAllowed = errors.New("not allowed")

// ErrUnknownRole means a role is not in the roles file.
var ErrUnknownRole = errors.New("unknown role")

// Role is one class of agents.
type Role struct {
	Name string `json:"-"`
	// Description tells a lead when to route here.
	Description string `json:"description,omitempty"`
	// Kind is the agent CLI the role's agents run (Kinds): it picks the
	// default command, how fleetd reads the CLI's screen and types into
	// it. Default "claude".
	Kind string `json:"kind,omitempty"`
	// Command launches the agent in its pane; "{settings}" is replaced by
	// the path of fleetd's hooks settings file and "{model}" by the model.
	// A word that is exactly "{resume}" stands for "--resume <id>" when a
	// spawn continues a Claude session and for nothing otherwise (see
	// ResumeArgv). Default: claude --settings {settings} [--model {model}].
	Command []string `json:"command,omitempty"`
	Model   string   `json:"model,omitempty"`
	// EnvClass is "clean" (default) or "gateway".
	EnvClass string `json:"env_class,omitempty"`
	// BaseURL is the ANTHROPIC_BASE_URL a gateway role must launch with.
	BaseURL string `json:"base_url,omitempty"`
	// Env is extra environment for the role's panes.
	Env map[string]string `json:"env,omitempty"`
	// Cap bounds the role's turns in flight fleet-wide; 0 = no cap.
	Cap int `json:"cap,omitempty"`
	// Tier is the role's depth: 0 orchestrator, 1 mains, 2 workers.
	Tier int `json:"tier,omitempty"`
	// Commands are the slash commands a lead may type into this role's
	// agents on purpose (a turn with "command" instead of "text"), by
	// name. Default: /clear and /compact. Anything else is refused before
	// it is queued.
	Commands []string `json:"commands,omitempty"`
	// FreshContext: every prompt turn is preceded by /clear, so the text
	// (an orchestrator's slice, say) is the only context the agent has.
	FreshContext bool `json:"fresh_context,omitempty"`
	// Worktree gives each agent of the role its own git worktree of a
	// repository, on branch fleet/<agent> (fleet/<session> for a named
	// session's agents), where its pane starts.
	Worktree *WorktreeSpec `json:"worktree,omitempty"`
	// Sandbox names the sandbox (Config.Sandboxes, or the built-in
	// "bwrap") the role's command is launched in.
	Sandbox string `json:"sandbox,omitempty"`
	// Inbox: the role's agents read by pull (mains, leads: MCP clients
	// that cannot be called into). A send from `fleetd mcp` to one of them
	// goes to its durable inbox instead of being typed as a turn, and
	// fleetd nudges it, when idle, to read its inbox.
	Inbox bool `json:"inbox,omitempty"`
	// Budget bounds the usage of all the role's agents together,
	// fleet-wide; AgentBudget that of each agent of the role. At 80% of a
	// limit fleetd warns (a budget_warning event, the roster); at 100%
	// new turns are refused (429 budget_exhausted) until usage leaves
	// the window.
	Budget      *Budget `json:"budget,omitempty"`
	AgentBudget *Budget `json:"agent_budget,omitempty"`
	// BudgetQueue: turns sent to the role while its budget is exhausted
	// wait in its queue (the router holds them until it frees) instead of
	// being refused.
	BudgetQueue bool `json:"budget_queue,omitempty"`
	// MaySpawn names the roles whose agents an agent of this role may
	// start through the shim (`fleetd mcp`'s spawn tool, POST /agents):
	// a lead or main that grows its own team. Empty: none. It is a policy
	// for the fleet's own agents, so a model cannot start what its role
	// was not given; it is no barrier against a holder of the shim's
	// token, who may spawn with `fleetd spawn` anyway.
	MaySpawn []string `json:"may_spawn,omitempty"`
	// Restart is what the gateway does when an agent of the role it
	// spawned dies: RestartNever (the default: it stays dead, as it
	// always did), RestartOnFailure (its process died without a clean
	// exit, or its pane exited) or RestartAlways (also after an /exit).
	// The agent comes back in a new pane under the same id, resuming its
	// Claude Code session.
	Restart string `json:"restart,omitempty"`
	// RestartMax restarts within RestartWindow, then the agent is left
	// dead and needs attention. Defaults 5 and 10m.
	RestartMax    int      `json:"restart_max,omitempty"`
	RestartWindow Duration `json:"restart_window,omitempty"`
	// RestartBackoff is the wait before the first restart within the
	// window, doubled for each one after it up to MaxRestartBackoff.
	// Default 1s.
	RestartBackoff Duration `json:"restart_backoff,omitempty"`
	// CwdRoots are the directories (absolute) a spawn of the role may
	// name as its working directory, themselves or below (CheckCwd).
	// Default: CwdRoots() — fleetd's home, working and temporary
	// directories.
	CwdRoots []string `json:"cwd_roots,omitempty"`
	// DenyDialogsAfter is the policy for a permission dialog nobody
	// answers: after this long open, fleetd answers it No itself (the
	// turn fails denied, by "policy"). Zero, the default, waits for a
	// person (`fleetd answer`, the dashboard); the turn still fails
	// blocked after the gateway's blocked timeout, the dialog left up.
	DenyDialogsAfter Duration `json:"deny_dialogs_after,omitempty"`
}

// AllowsSpawn reports whether an agent of this role may spawn an agent of
// role other, and why not.
func (r Role) AllowsSpawn(other string) error {
	if slices.Contains(r.MaySpawn, other) {
		return nil
	}
	if len(r.MaySpawn) == 0 {
		return fmt.Errorf("%w: role %q may spawn no agents (give it \"may_spawn\": [%q] in the roles file)", ErrNotAllowed, r.Name, other)
	}
	return fmt.Errorf("%w: role %q may spawn only %s, not %q", ErrNotAllowed, r.Name, strings.Join(r.MaySpawn, ", "), other)
}

// Restart policies (Role.Restart).
const (
	RestartNever     = "never"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Restart defaults, and the longest wait between restarts.
const (
	DefaultRestartMax     = 5
	DefaultRestartWindow  = 10 * time.Minute
	DefaultRestartBackoff = time.Second
	MaxRestartBackoff     = time.Minute
)

// Duration is a time.Duration written as a Go duration string ("10m") in
// the roles file.
type Duration time.Duration

// UnmarshalJSON reads "10m", "1.5s" and the like.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"10m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Restarts reports whether an agent of the role that died is restarted:
// clean says it ended on purpose (an /exit, a logout), which only
// RestartAlways restarts.
func (r Role) Restarts(clean bool) bool {
	switch r.Restart {
	case RestartAlways:
		return true
	case RestartOnFailure:
		return !clean
	}
	return false
}

// RestartDelay is the wait before a restart when n restarts already
// happened within the window: the backoff doubled n times, capped.
func (r Role) RestartDelay(n int) time.Duration {
	d := time.Duration(r.RestartBackoff)
	for range n {
		d *= 2
		if d >= MaxRestartBackoff {
			return MaxRestartBackoff
		}
	}
	return min(d, MaxRestartBackoff)
}

// WorktreeSpec is where a role's agents get their worktrees from.
type WorktreeSpec struct {
	// Repo is the repository (an absolute path to its main checkout).
	Repo string `json:"repo"`
	// Base is the branch new agent branches start from; default the
	// branch the main checkout has checked out.
	Base string `json:"base,omitempty"`
}

// RoleWorktree is where one role's agents get their worktrees from.
type RoleWorktree struct {
	Role string
	WorktreeSpec
}

// Worktrees lists the repositories (and bases) the roles give their
// agents worktrees of, each once, under the first role (by name) that
// does; with only set, that role's alone. fleetd worktrees lists and
// prunes what they hold. None is an error that says what the file lacks.
func (c Config) Worktrees(only string) ([]RoleWorktree, error) {
	var out []RoleWorktree
	for _, name := range c.Names() {
		w := c.Roles[name].Worktree
		if w == nil || (only != "" && name != only) {
			continue
		}
		if !slices.ContainsFunc(out, func(o RoleWorktree) bool { return o.WorktreeSpec == *w }) {
			out = append(out, RoleWorktree{Role: name, WorktreeSpec: *w})
		}
	}
	switch {
	case len(out) == 0 && only != "":
		return nil, fmt.Errorf("role %q gives its agents no worktrees, or is not in the roles file", only)
	case len(out) == 0:
		return nil, errors.New("no role in the roles file gives its agents worktrees (\"worktree\": {\"repo\": …})")
	}
	return out, nil
}

// The agent kinds: the CLI a role's agents run. Each is a room of the
// delivery engine (herdrbridge.Kind), measured against its real CLI.
const (
	KindClaude = "claude"
	KindCodex  = "codex"
)

// Kinds are the kinds a role may name: Claude Code's and Codex's here,
// and each further kind's from its own file (registerKind).
var Kinds = []string{KindClaude, KindCodex}

// registerKind adds a kind a role may name, from the kind's own file (an
// init func), so that adding a kind edits no other kind's lines.
func registerKind(name string, s kindSpec) {
	if _, dup := kindSpecs[name]; dup {
		panic("roles: kind registered twice: " + name)
	}
	Kinds = append(Kinds, name)
	kindSpecs[name] = s
}

// CodexBoundaryVars are the variables that take Codex off a ChatGPT
// login: an API key or another endpoint. A gateway role's endpoint goes
// in the config.toml fleetd writes for the agent (a model provider whose
// key is the role's OPENAI_API_KEY), not in these.
var CodexBoundaryVars = []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"}

// kindSpec is what a role's launch needs to know of its kind.
type kindSpec struct {
	// command is the default command; model adds the model flag.
	command func(model bool) []string
	// resume are the words before a session id in place of {resume}
	// (Claude: --resume <id>; Codex: the resume subcommand, resume <id>).
	resume string
	// boundary are the variables a clean role's pane may not carry.
	boundary []string
	// baseURLVar is the variable a gateway role launches with, set to
	// its base_url; "" when fleetd writes the endpoint into the CLI's
	// own config instead.
	baseURLVar string
	// commands is the default allow-list of explicit commands.
	commands []string
}

var kindSpecs = map[string]kindSpec{
	KindClaude: {
		command: func(model bool) []string {
			if model {
				return []string{"claude", "--settings", "{settings}", "--model", "{model}"}
			}
			return []string{"claude", "--settings", "{settings}"}
		},
		resume: "--resume", boundary: BoundaryVars, baseURLVar: "ANTHROPIC_BASE_URL", commands: []string{"/clear", "/compact"},
	},
	KindCodex: {
		command: func(model bool) []string {
			if model {
				return []string{"codex", "{resume}", "--model", "{model}"}
			}
			return []string{"codex", "{resume}"}
		},
		resume: "resume", boundary: CodexBoundaryVars, commands: []string{"/new", "/compact"},
	},
}

// spec is the role's kind's launch facts (Claude Code's for a kind not
// known, which Validate refuses).
func (r Role) spec() kindSpec {
	if k, ok := kindSpecs[r.Kind]; ok {
		return k
	}
	return kindSpecs[KindClaude]
}

// DefaultCommands are the commands a Claude Code role allows when it
// names none (each kind has its own default list): the
// two that manage the agent's context.
var DefaultCommands = []string{"/clear", "/compact"}

// commandRE is the shape of a slash command: "/" and a name, then
// optional arguments.
// Compiled on first use, not as every fleetd process (each hook run) starts.
var commandRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/[A-Za-z0-9:_-]+(\s|$)`) })

// CommandName is the name of a slash command line ("/compact focus on
// tests" → "/compact"), or "" when line is not one.
func CommandName(line string) string {
	if !commandRE().MatchString(line) {
		return ""
	}
	if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
		return line[:i]
	}
	return line
}

// AllowsCommand reports whether a lead may type command (a whole command
// line) into the role's agents, and why not.
func (r Role) AllowsCommand(command string) error {
	name := CommandName(command)
	if name == "" {
		return fmt.Errorf("%q is not a slash command (\"/name\" and optional arguments)", command)
	}
	if strings.ContainsAny(command, "\n\r") {
		return fmt.Errorf("a command is one line")
	}
	allowed := r.Commands
	if len(allowed) == 0 {
		allowed = r.spec().commands
	}
	if !slices.Contains(allowed, name) {
		return fmt.Errorf("role %q does not allow %s (allowed: %s; set \"commands\" in the roles file)", r.Name, name, strings.Join(allowed, ", "))
	}
	return nil
}

// Config is the whole roles file.
type Config struct {
	Roles map[string]Role `json:"roles"`
	// Sandboxes are the launch templates roles may name, besides the
	// built-in "bwrap" (which a file may redefine).
	Sandboxes map[string]Sandbox `json:"sandboxes,omitempty"`
}

// Compiled on first use, not as every fleetd process (each hook run) starts.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// Default is the roles fleetd knows without a file: a clean lead and main,
// and clean Claude workers. Gateway roles need a URL, so they come from a
// file.
func Default() Config {
	c := Config{Roles: map[string]Role{
		"lead":     {Description: "the team lead; plans and delegates", Tier: 0, EnvClass: EnvClean},
		"main":     {Description: "a main agent under the orchestrator", Tier: 1, EnvClass: EnvClean},
		"w-claude": {Description: "Claude workers: reasoning-heavy, careful edits", Tier: 2, EnvClass: EnvClean},
	}}
	c.setDefaults()
	return c
}

// Load reads a roles file (JSON). An empty path gives Default.
func Load(path string) (Config, error) {
	if path == "" {
		return Default(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("roles file: %w", err)
	}
	return Parse(b)
}

// Parse decodes and validates a roles file.
func Parse(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("roles file: %w", err)
	}
	c.setDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) setDefaults() {
	for name, s := range c.Sandboxes {
		s.Name = name
		c.Sandboxes[name] = s
	}
	for name, r := range c.Roles {
		r.Name = name
		if r.Kind == "" {
			r.Kind = KindClaude
		}
		if r.EnvClass == "" {
			r.EnvClass = EnvClean
		}
		if r.Restart == "" {
			r.Restart = RestartNever
		}
		if r.RestartMax == 0 {
			r.RestartMax = DefaultRestartMax
		}
		if r.RestartWindow == 0 {
			r.RestartWindow = Duration(DefaultRestartWindow)
		}
		if r.RestartBackoff == 0 {
			r.RestartBackoff = Duration(DefaultRestartBackoff)
		}
		if len(r.Command) == 0 {
			r.Command = r.spec().command(r.Model != "")
		}
		c.Roles[name] = r
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	for _, name := range c.Names() {
		r := c.Roles[name]
		if !nameRE().MatchString(name) {
			errs = append(errs, fmt.Errorf("role %q: name must match %s", name, nameRE()))
		}
		if r.Kind != "" && !slices.Contains(Kinds, r.Kind) { // "" is claude (a Config built in Go, not parsed)
			errs = append(errs, fmt.Errorf("role %q: kind %q: this fleetd drives %s (more kinds come as each is verified with its real CLI)", name, r.Kind, strings.Join(Kinds, ", ")))
		}
		switch r.EnvClass {
		case EnvClean:
			if r.BaseURL != "" {
				errs = append(errs, fmt.Errorf("role %q: a clean role cannot have a base_url", name))
			}
		case EnvGateway:
			if r.BaseURL == "" {
				errs = append(errs, fmt.Errorf("role %q: a gateway role needs base_url", name))
			}
		default:
			errs = append(errs, fmt.Errorf("role %q: env_class %q, want clean or gateway", name, r.EnvClass))
		}
		if v := r.spec().baseURLVar; v != "" {
			if _, ok := r.Env[v]; ok {
				errs = append(errs, fmt.Errorf("role %q: set %s through env_class and base_url, not env", name, v))
			}
		}
		if r.EnvClass == EnvClean {
			for _, k := range r.spec().boundary {
				if _, ok := r.Env[k]; ok {
					errs = append(errs, fmt.Errorf("role %q: a clean role runs on the subscription and must not set %s", name, k))
				}
			}
		}
		for _, c := range r.Commands {
			if CommandName(c) != c {
				errs = append(errs, fmt.Errorf("role %q: command %q: want a slash command name such as /clear", name, c))
			}
		}
		if r.Cap < 0 || r.Tier < 0 {
			errs = append(errs, fmt.Errorf("role %q: cap and tier must not be negative", name))
		}
		switch r.Restart {
		case "", RestartNever, RestartOnFailure, RestartAlways:
		default:
			errs = append(errs, fmt.Errorf("role %q: restart %q, want never, on-failure or always", name, r.Restart))
		}
		for _, root := range r.CwdRoots {
			if !filepath.IsAbs(root) || CheckWord("cwd root", root) != nil {
				errs = append(errs, fmt.Errorf("role %q: cwd_roots: %q is not an absolute path", name, root))
			}
		}
		if r.DenyDialogsAfter < 0 {
			errs = append(errs, fmt.Errorf("role %q: deny_dialogs_after must not be negative", name))
		}
		if r.RestartMax < 0 || r.RestartWindow < 0 || r.RestartBackoff < 0 {
			errs = append(errs, fmt.Errorf("role %q: restart_max, restart_window and restart_backoff must not be negative", name))
		}
		if w := r.Worktree; w != nil && (w.Repo == "" || !filepath.IsAbs(w.Repo)) {
			errs = append(errs, fmt.Errorf("role %q: worktree repo %q must be an absolute path", name, w.Repo))
		}
		r.Name = name
		errs = append(errs, r.validateBudgets()...)
		for _, m := range r.MaySpawn {
			if _, ok := c.Roles[m]; !ok {
				errs = append(errs, fmt.Errorf("role %q: may_spawn names %q, which is no role of the file", name, m))
			}
		}
		if r.Sandbox != "" {
			sb, err := c.Sandbox(r.Sandbox)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("role %q: %w", name, err))
			case r.Kind != "" && r.Kind != KindClaude && !sb.UsesConfig():
				// Its config home (CODEX_HOME, …) sits in fleetd's state
				// directory: a template that does not bind it leaves the
				// agent without its hooks and sessions.
				errs = append(errs, fmt.Errorf("role %q: %w %q: a %s agent needs its config home bound: the template has no %s", name, ErrSandbox, sb.Name, r.Kind, ConfigPlaceholder))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sandboxes)) {
		if !nameRE().MatchString(name) {
			errs = append(errs, fmt.Errorf("sandbox %q: name must match %s", name, nameRE()))
		}
		if err := c.Sandboxes[name].Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sandbox returns the sandbox named name: the roles file's, else a
// built-in one (Bwrap).
func (c Config) Sandbox(name string) (Sandbox, error) {
	if s, ok := c.Sandboxes[name]; ok {
		s.Name = name
		return s, nil
	}
	if s, ok := builtinSandboxes()[name]; ok {
		return s, nil
	}
	known := slices.Sorted(maps.Keys(builtinSandboxes()))
	for n := range c.Sandboxes {
		known = append(known, n)
	}
	return Sandbox{}, fmt.Errorf("%w: no sandbox %q (known: %s)", ErrSandbox, name, strings.Join(lo.Uniq(known), ", "))
}

// HasBudgets reports whether any role has a budget: then how the fleet
// stands changes with the clock alone, as usage leaves its windows.
func (c Config) HasBudgets() bool {
	for _, r := range c.Roles {
		if r.Budget != nil || r.AgentBudget != nil {
			return true
		}
	}
	return false
}

// Names lists the roles, sorted.
func (c Config) Names() []string {
	out := make([]string, 0, len(c.Roles))
	for n := range c.Roles {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Get returns the role named name.
// The role comes with its defaults applied, also when the config was built
// in code rather than parsed.
func (c Config) Get(name string) (Role, error) {
	r, ok := c.Roles[name]
	if !ok {
		return Role{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownRole, name, strings.Join(c.Names(), ", "))
	}
	one := Config{Roles: map[string]Role{name: r}}
	one.setDefaults()
	return one.Roles[name], nil
}

// LaunchEnv is the environment a pane of this role gets on top of the
// caller's: the role's env plus, for gateway roles, ANTHROPIC_BASE_URL.
func (r Role) LaunchEnv() map[string]string {
	env := map[string]string{}
	for k, v := range r.Env {
		env[k] = v
	}
	if v := r.spec().baseURLVar; r.EnvClass == EnvGateway && v != "" {
		env[v] = r.BaseURL
	}
	return env
}

// ResumePlaceholder, as a word of its own in Role.Command, is where a
// resumed spawn puts "--resume <id>"; a fresh spawn drops it.
const ResumePlaceholder = "{resume}"

// Argv is the role's launch command with its placeholders filled, for a
// fresh conversation (a {resume} word is dropped).
func (r Role) Argv(settingsPath string) []string {
	argv, _ := r.ResumeArgv(settingsPath, "")
	return argv
}

// ResumeArgv is Argv continuing the Claude Code session sessionID, so a
// closed session comes back with its conversation: the {resume} word
// becomes "--resume <id>", and a claude command without one gets it
// appended. ok is false when the command can do neither (a custom command
// without {resume}): the caller must not pretend it resumed. An empty
// sessionID is Argv.
func (r Role) ResumeArgv(settingsPath, sessionID string) (argv []string, ok bool) {
	placed := false
	for _, a := range r.Command {
		if a == ResumePlaceholder {
			placed = true
			if sessionID != "" {
				argv = append(argv, r.spec().resume, sessionID)
			}
			continue
		}
		a = strings.ReplaceAll(a, "{settings}", settingsPath)
		argv = append(argv, strings.ReplaceAll(a, "{model}", r.Model))
	}
	if sessionID == "" || placed {
		return argv, true
	}
	if len(argv) > 0 && filepath.Base(argv[0]) == KindClaude && (r.Kind == "" || r.Kind == KindClaude) {
		return append(argv, "--resume", sessionID), true
	}
	return argv, false
}

// CheckEnv reports whether env (the complete environment a pane would run
// with, or was found with) stays on the role's side of the boundary.
func (r Role) CheckEnv(env map[string]string) error {
	v := r.spec().baseURLVar
	base, hasBase := env[v]
	switch r.EnvClass {
	case EnvGateway:
		if v == "" {
			// The endpoint is in the CLI's config fleetd writes; no
			// endpoint variable of the kind's boundary (OPENAI_BASE_URL,
			// ANTHROPIC_BASE_URL, AZURE_OPENAI_BASE_URL, …) may point
			// the pane elsewhere.
			for _, k := range r.spec().boundary {
				if !strings.HasSuffix(k, "_BASE_URL") {
					continue
				}
				if got, ok := env[k]; ok && got != r.BaseURL {
					return fmt.Errorf("%w: role %q may only use %s, not %s=%s", ErrBoundary, r.Name, r.BaseURL, k, got)
				}
			}
			return nil
		}
		if !hasBase {
			return fmt.Errorf("%w: role %q is a gateway role and must launch with %s=%s", ErrBoundary, r.Name, v, r.BaseURL)
		}
		if base != r.BaseURL {
			return fmt.Errorf("%w: role %q may only use %s=%s, not %s", ErrBoundary, r.Name, v, r.BaseURL, base)
		}
	default:
		for _, k := range r.spec().boundary {
			if _, ok := env[k]; ok {
				return fmt.Errorf("%w: role %q is clean (on the subscription) and must not carry %s", ErrBoundary, r.Name, k)
			}
		}
	}
	return nil
}
