package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// Kinds of agent the demo runs (Options.Kind).
const (
	// KindSim runs simulated Claude Code agents (fleetd sim-agent).
	KindSim = "sim"
	// KindClaude runs the real Claude Code against the fake API.
	KindClaude = "claude"
	// KindAuto is KindClaude when claude is on PATH, else KindSim.
	KindAuto = "auto"
	// KindCodex, KindGemini, KindOpenCode and KindPi run that real CLI
	// against the fake API, each in the protocol it speaks (OpenAI
	// Responses, Gemini's streamGenerateContent, Anthropic Messages).
	KindCodex    = "codex"
	KindGemini   = "gemini"
	KindOpenCode = "opencode"
	KindPi       = "pi"
	// KindMixed runs one role of each real CLI on PATH (at least two).
	KindMixed = "mixed"
)

// Kinds are the demo's kinds, as `fleetd demo --help` lists them.
var Kinds = []string{KindSim, KindClaude, KindCodex, KindGemini, KindOpenCode, KindPi, KindMixed, KindAuto}

// agentCLI is a real agent CLI the demo can run: its kind (the roles
// kind, the demo kind and the name of its .ci/install-<kind>.sh), its
// executable, its name for people, and the npm package and version
// fleetd's kind was measured against.
type agentCLI struct {
	kind, bin, name, pkg, version string
}

// agentCLIs are the real CLIs, in the order mixed gives them roles.
var agentCLIs = []agentCLI{
	{roles.KindClaude, "claude", "Claude Code", "@anthropic-ai/claude-code", fakeapi.ClaudeVersion},
	{roles.KindCodex, "codex", "Codex", "@openai/codex", fakeapi.CodexVersion},
	{roles.KindGemini, "gemini", "Gemini CLI", "@google/gemini-cli", fakeapi.GeminiVersion},
	{roles.KindOpenCode, "opencode", "OpenCode", "opencode-ai", fakeapi.OpenCodeVersion},
	{roles.KindPi, "pi", "Pi", "@mariozechner/pi-coding-agent", fakeapi.PiVersion},
}

func cliOf(kind string) (agentCLI, bool) {
	i := slices.IndexFunc(agentCLIs, func(c agentCLI) bool { return c.kind == kind })
	if i < 0 {
		return agentCLI{}, false
	}
	return agentCLIs[i], true
}

// install says how to put the pinned version on PATH: npm's global
// install anywhere, or the script CI runs in a clone of fleetd.
func (c agentCLI) install() string {
	return fmt.Sprintf("npm install -g %s@%s, or in a clone of fleetd: export PATH=\"$(.ci/install-%s.sh):$PATH\"", c.pkg, c.version, c.kind)
}

// Options are one demo run's settings: `fleetd demo`'s flags, and what
// the CLI knows of its process (where to print, how to log, its version
// and executable).
type Options struct {
	// Agents (at least 2) are split over the roles: w-claude and w-local
	// (simulated or real Claude Code), w-<kind> and w-local (one real
	// CLI), or w-<kind> for each real CLI on PATH (mixed, which runs at
	// least one agent per role).
	Agents int
	// Tasks (at least 1) is how many tasks the lead fans out at once.
	Tasks int
	// Think is how long a simulated agent works on a task.
	Think time.Duration
	// Kind is one of Kinds; empty means KindSim.
	Kind string
	// Keep stays up after the run until ctx ends, for exploring.
	Keep bool
	// Dir keeps the demo's data; empty means a temp dir removed at the end
	// (unless Keep).
	Dir string
	// Timeout bounds the whole run, Keep's stay included. Required.
	Timeout time.Duration
	// Plain prints progress as plain lines even when Out is a terminal.
	Plain bool
	// Runtime is where the agents run: "herdr" (default: the built-in
	// herdr's PTY panes) or "agentapi" (each under its own agentapi
	// server, which must be on PATH).
	Runtime string

	// Out gets the demo's report (default os.Stdout).
	Out io.Writer
	// Logger is the components' logger (default slog.Default()).
	Logger *slog.Logger
	// Version is what the demo's gateway announces.
	Version string
	// Fleetd is the fleetd executable simulated agents run as
	// `fleetd sim-agent` (default: this process's executable).
	Fleetd string
}

func (o *Options) setDefaults() {
	if o.Kind == "" {
		o.Kind = KindSim
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every problem with the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.Agents < 2 || o.Tasks < 1 {
		errs = append(errs, errors.New("demo: need at least 2 agents and 1 task"))
	}
	if !slices.Contains(Kinds, o.Kind) {
		errs = append(errs, fmt.Errorf("demo: unknown kind %q (want one of %s)", o.Kind, strings.Join(Kinds, ", ")))
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("demo: the timeout must be positive"))
	}
	return errors.Join(errs...)
}

// realCLIs are the kinds of real CLI a demo of kind runs, one role each
// for mixed (the CLIs on PATH), one for the rest; none for sim, or for
// auto without claude. A kind whose CLI is not on PATH is refused with
// how to install it; mixed with fewer than two, with how to install each
// one missing.
func realCLIs(kind string) ([]string, error) {
	onPath := func(c agentCLI) bool {
		_, err := exec.LookPath(c.bin)
		return err == nil
	}
	switch kind {
	case KindSim:
		return nil, nil
	case KindAuto:
		if c, _ := cliOf(KindClaude); onPath(c) {
			return []string{KindClaude}, nil
		}
		return nil, nil
	case KindMixed:
		var found, missing []string
		var how strings.Builder
		for _, c := range agentCLIs {
			if onPath(c) {
				found = append(found, c.kind)
				continue
			}
			missing = append(missing, c.bin)
			fmt.Fprintf(&how, "\n  %-9s %s %s: %s", c.bin, c.name, c.version, c.install())
		}
		if len(found) >= 2 {
			return found, nil
		}
		have := "none"
		if len(found) > 0 {
			have = "only " + strings.Join(found, ", ")
		}
		return nil, fmt.Errorf("demo: --kind mixed needs at least two agent CLIs on PATH, found %s; missing %s. Install one or more:%s",
			have, strings.Join(missing, ", "), how.String())
	}
	c, _ := cliOf(kind)
	if !onPath(c) {
		return nil, fmt.Errorf("demo: --kind %s needs the %s CLI (%s %s) on PATH: %s", kind, c.bin, c.name, c.version, c.install())
	}
	return []string{kind}, nil
}

// Run performs the demo: it starts a Fabric, spawns the agents, fans the
// tasks out through the lead shim and prints a summary. It fails with
// ErrNoReply unless every turn replied.
func Run(ctx context.Context, opts Options) error {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	clis, err := realCLIs(opts.Kind)
	if err != nil {
		return err
	}
	d := &run{opts: opts, out: opts.Out, clis: clis, real: len(clis) > 0}
	switch opts.Runtime {
	case "", "herdr":
	case "agentapi":
		bin, err := agentapi.LookPath("")
		if err != nil {
			return fmt.Errorf("demo --runtime agentapi: %w", err)
		}
		if _, err := agentapi.CheckVersion(ctx, bin); err != nil {
			return fmt.Errorf("demo --runtime agentapi: %w", err)
		}
		d.start = func(spec herdrtest.StartSpec) (herdrtest.Terminal, error) {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return agentapi.StartTerminal(sctx, agentapi.TerminalConfig{Bin: bin, Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows})
		}
	default:
		return fmt.Errorf("demo: runtime %q: want herdr or agentapi", opts.Runtime)
	}
	d.roleNames = roleNames(clis)
	if d.exe = opts.Fleetd; d.exe == "" && !d.real {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo: find fleetd: %w", err)
		}
		d.exe = exe
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	err = d.run(ctx)
	d.close()
	return err
}

// roleNames are the demo's roles for the real CLIs it runs: w-claude and
// w-local for simulated Claude Code, w-<kind> and w-local for one real
// CLI, w-<kind> for each of several.
func roleNames(clis []string) []string {
	switch len(clis) {
	case 0:
		return []string{"w-claude", "w-local"}
	case 1:
		return []string{"w-" + clis[0], "w-local"}
	}
	var names []string
	for _, k := range clis {
		names = append(names, "w-"+k)
	}
	return names
}

// run is one demo's moving parts.
type run struct {
	opts   Options
	start  func(herdrtest.StartSpec) (herdrtest.Terminal, error) // the panes' runtime; nil: PTYs
	out    io.Writer
	exe    string
	dir    string
	real   bool
	fab    *Fabric
	agents []string
	// clis are the kinds of real CLI the roles run (realCLIs), roleNames
	// the roles: clis[i]'s is roleNames[i], and with one CLI w-local
	// runs it too.
	clis      []string
	roleNames []string

	mu      sync.Mutex
	results []leadshim.Envelope
	errs    []error
}

func (d *run) run(ctx context.Context) error {
	if err := d.setup(ctx); err != nil {
		return err
	}
	if err := d.spawn(ctx); err != nil {
		return err
	}
	start := time.Now()
	d.fanOut(ctx)
	d.summary(time.Since(start))
	if d.opts.Keep {
		d.explore(ctx)
	}
	if n := d.failed(); n > 0 {
		return fmt.Errorf("demo: %d of %d %w", n, d.opts.Tasks, ErrNoReply)
	}
	return nil
}

func (d *run) step(format string, args ...any) {
	fmt.Fprintf(d.out, "▸ "+format+"\n", args...)
}

func (d *run) setup(ctx context.Context) error {
	d.dir = d.opts.Dir
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "fleetd-demo-")
		if err != nil {
			return err
		}
		d.dir = dir
	}
	// The real CLIs get what their tests give them: the terminal their
	// screens were measured in (120×40), and 30 s for a typed prompt's
	// proof of submission. A real CLI's first prompt, while several
	// start at once on a small machine, can take longer than the
	// default 5 s (OpenCode's did), after which the gateway presses
	// Enter again and reads the screen of a TUI still switching views.
	// The simulated agents keep herdr's and the gateway's defaults.
	var cols, rows int
	var submit time.Duration
	if d.real {
		cols, rows, submit = 120, 40, 30*time.Second
	}
	fab, err := StartFabric(ctx, FabricConfig{Dir: d.dir, Host: "demo", Version: d.opts.Version, SyncAlways: true,
		Logger: d.opts.Logger, Roles: d.roles, Cols: cols, Rows: rows, SubmitTimeout: submit, Start: d.start})
	if err != nil {
		return err
	}
	d.fab = fab
	d.step("fleetd demo: %d %s, %d tasks", d.agentCount(), d.describe(), d.opts.Tasks)
	d.step("data in %s; built-in herdr on %s; fake API at %s", d.dir, fab.HerdrPath(), fab.API.URL())
	d.step("fleetd up: NATS %s, lead shim http://%s", fab.Gateway.NATSURL(), fab.Gateway.HTTPAddr())
	d.step("dashboard: http://%s/ (watch the fleet work, live)", fab.Gateway.HTTPAddr())
	return nil
}

// describe says in a few words what agents the demo runs.
func (d *run) describe() string {
	switch len(d.clis) {
	case 0:
		return "simulated Claude Code agents (fleetd sim-agent, firing the real hooks)"
	case 1:
		if d.clis[0] == KindClaude {
			return "real Claude Code agents against a built-in fake Anthropic API"
		}
		c, _ := cliOf(d.clis[0])
		return "real " + c.name + " agents against a built-in fake model API"
	}
	var each []string
	for i, k := range d.clis {
		c, _ := cliOf(k)
		each = append(each, fmt.Sprintf("%s (%s)", c.name, d.roleNames[i]))
	}
	return "real agents, a role for each CLI on PATH: " + strings.Join(each, ", ") + ", against a built-in fake model API"
}

// agentCount is how many agents the demo spawns: Options.Agents, raised
// so that every role has one (mixed may have more roles than agents
// asked for, and a role without an agent would never answer its tasks).
func (d *run) agentCount() int {
	return max(d.opts.Agents, len(d.roleNames))
}

// roles are the demo's roles. Simulated: w-claude (clean, on the
// subscription) and w-local (a gateway role pointed at the fake API).
// Real CLIs must all reach the fake API, so every role is a gateway role
// (realRole).
func (d *run) roles(api *fakeapi.Server) (roles.Config, error) {
	cfg := roles.Config{Roles: map[string]roles.Role{}}
	if !d.real {
		think := d.opts.Think.String()
		cfg.Roles["w-claude"] = roles.Role{EnvClass: roles.EnvClean, Tier: 2, Env: map[string]string{"HERDR_AGENT": "claude"},
			Command: []string{d.exe, "sim-agent", "--think", think, "--model", "claude-sim-sonnet"}}
		cfg.Roles["w-local"] = roles.Role{EnvClass: roles.EnvGateway, BaseURL: api.URL(), Tier: 2,
			Env: map[string]string{"HERDR_AGENT": "claude"}, Cap: max(1, d.opts.Agents/2),
			Command: []string{d.exe, "sim-agent", "--think", think, "--model", "local-sim"}}
		return cfg, cfg.Validate()
	}
	home := filepath.Join(d.dir, "claude-home")
	work := filepath.Join(d.dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return cfg, err
	}
	if err := fakeapi.WriteClaudeHome(home, work); err != nil {
		return cfg, err
	}
	if slices.Contains(d.clis, KindOpenCode) {
		if err := seedOpenCodeGlobalConfig(home); err != nil {
			return cfg, err
		}
	}
	for i, name := range d.roleNames {
		cfg.Roles[name] = realRole(d.clis[min(i, len(d.clis)-1)], api.URL(), home)
	}
	return cfg, cfg.Validate()
}

// realRole is a gateway role of the real CLI kind against the fake API
// at apiURL, with home the agents' HOME (which WriteClaudeHome made), as
// the real-CLI tests of cmd/fleetd build theirs: each CLI's key, model
// naming and endpoint. fleetd writes each agent's own config (Codex's
// CODEX_HOME, Gemini's GEMINI_CLI_HOME, OpenCode's config dir, Pi's
// agent dir) pointed at the role's base_url.
func realRole(kind, apiURL, home string) roles.Role {
	r := roles.Role{Kind: kind, EnvClass: roles.EnvGateway, BaseURL: apiURL, Tier: 2}
	switch kind {
	case KindClaude:
		r.Command = []string{"claude", "--settings", "{settings}"}
		r.Env = map[string]string{"HOME": home, "ANTHROPIC_AUTH_TOKEN": "test", "DISABLE_TELEMETRY": "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
	case KindCodex:
		// The fake's OpenAI Responses API is under /v1.
		r.BaseURL, r.Model, r.Command = apiURL+"/v1", "fake-model", []string{"codex", "{resume}"}
		r.Env = map[string]string{"HOME": home, "OPENAI_API_KEY": "sk-fake"}
	case KindGemini:
		// Gemini's SDK adds /v1beta to the base URL itself.
		r.Model, r.Command = "gemini-2.5-flash", []string{"gemini", "{resume}"}
		r.Env = map[string]string{"HOME": home, "GEMINI_API_KEY": "fake-key"}
	case KindOpenCode:
		// OpenCode names models "provider/model"; a gateway role's
		// provider is "fleet", which fleetd writes at the base URL for
		// OpenCode's Anthropic client (its /v1/messages). It follows
		// XDG: its sessions, state and cache stay under the demo's home.
		r.BaseURL, r.Model, r.Command = apiURL+"/v1", "fleet/fake-model", []string{"opencode", "{resume}"}
		r.Env = map[string]string{"HOME": home, "ANTHROPIC_API_KEY": "sk-fake",
			"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share"),
			"XDG_STATE_HOME": filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME": filepath.Join(home, ".cache")}
	case KindPi:
		// Pi's model provider (anthropic-messages) goes in the
		// models.json fleetd writes for the agent.
		r.Model, r.Command = "fake-model", []string{"pi", "{resume}"}
		r.Env = map[string]string{"HOME": home, "ANTHROPIC_API_KEY": "sk-fake"}
	}
	return r
}

// seedOpenCodeGlobalConfig makes the global config directory of the
// agents' HOME hold OpenCode's plugin package already, as fleetd does for
// each agent's own: OpenCode npm-installs it into every config directory
// whose lock file does not list it, as it starts, and the demo stays off
// the registry.
func seedOpenCodeGlobalConfig(home string) error {
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		return err
	}
	dep := `{"@opencode-ai/plugin":"` + herdrbridge.OpenCodeVersion + `"}`
	for name, body := range map[string]string{
		"package.json":      `{"dependencies":` + dep + `}`,
		"package-lock.json": `{"lockfileVersion":3,"packages":{"":{"dependencies":` + dep + `}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (d *run) spawn(ctx context.Context) error {
	cwd := d.dir
	if d.real {
		cwd = filepath.Join(d.dir, "work")
	}
	var specs []AgentSpec
	n := len(d.roleNames)
	for i := range d.agentCount() {
		role := d.roleNames[i%n]
		name := fmt.Sprintf("%s-%d", role, i/n+1)
		specs = append(specs, AgentSpec{Role: role, Name: name, Cwd: cwd})
		d.agents = append(d.agents, name)
	}
	if err := d.fab.Spawn(ctx, specs); err != nil {
		return err
	}
	d.step("spawned %s", strings.Join(d.agents, ", "))
	// Ready = each agent's session started (its hook said so) and idle.
	if err := d.fab.WaitReady(ctx, d.agents); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.step("all %d agents ready", len(d.agents))
	return nil
}

// fanOut is the lead: every task at once through the blocking POST
// /message, in turn to each role; the fabric queues what it cannot start.
func (d *run) fanOut(ctx context.Context) {
	var to []string
	for _, r := range d.roleNames {
		to = append(to, "role:"+r)
	}
	d.step("lead: sending %d tasks at once (POST /message, blocking) to %s", d.opts.Tasks, strings.Join(to, ", "))
	var wg sync.WaitGroup
	for i := range d.opts.Tasks {
		wg.Go(func() {
			role := d.roleNames[i%len(d.roleNames)]
			msg := leadshim.Message{To: "role:" + role, From: "lead", Text: fmt.Sprintf("task %d: summarise module %c", i+1, 'A'+i%26), Timeout: "2m"}
			var env leadshim.Envelope
			err := d.fab.Client.Do(ctx, http.MethodPost, "/message", msg, &env)
			d.mu.Lock()
			defer d.mu.Unlock()
			if err != nil {
				d.errs = append(d.errs, fmt.Errorf("task %d: %w", i+1, err))
				return
			}
			d.results = append(d.results, env)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	d.progress(ctx, done)
}

func (d *run) progress(ctx context.Context, done <-chan struct{}) {
	live := !d.opts.Plain && isTerminal(d.out)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	printed, lines := 0, 0
	for {
		select {
		case <-done:
			if live {
				d.drawRoster(lines)
			}
			d.printResults(&printed, live)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			if live {
				lines = d.drawRoster(lines)
			} else {
				d.printResults(&printed, false)
			}
		}
	}
}

// drawRoster redraws a compact roster in place (terminal only).
func (d *run) drawRoster(prev int) int {
	if prev > 0 {
		fmt.Fprintf(d.out, "\x1b[%dA\x1b[J", prev)
	}
	d.mu.Lock()
	doneN := len(d.results) + len(d.errs)
	d.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "  %-12s %-9s %-8s %-6s %s\n", "AGENT", "ROLE", "STATUS", "QUEUE", "TOKENS in/out")
	for _, a := range d.agents {
		r, _ := d.fab.Gateway.Views.Agent(a)
		fmt.Fprintf(&b, "  %-12s %-9s %-8s %-6d %d/%d\n", a, r.Role, r.Status, r.QueueDepth, r.Tokens.In, r.Tokens.Out)
	}
	fmt.Fprintf(&b, "  turns finished: %d/%d\n", doneN, d.opts.Tasks)
	fmt.Fprint(d.out, b.String())
	return strings.Count(b.String(), "\n")
}

func (d *run) printResults(printed *int, quiet bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ; *printed < len(d.results); *printed++ {
		if quiet {
			continue
		}
		e := d.results[*printed]
		fmt.Fprintf(d.out, "  ✓ %-12s %5dms  %s\n", e.Agent, e.DurationMS, clip(e.Reply, 60))
	}
}

func (d *run) failed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.errs)
	for _, e := range d.results {
		if e.Status != "replied" {
			n++
		}
	}
	return n
}

func (d *run) summary(wall time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var lat []time.Duration
	perAgent := map[string]int{}
	replied := 0
	for _, e := range d.results {
		if e.Status == "replied" {
			replied++
		}
		lat = append(lat, time.Duration(e.DurationMS)*time.Millisecond)
		perAgent[e.Agent]++
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	tasks := d.opts.Tasks
	fmt.Fprintf(d.out, "\n── summary ─────────────────────────────────────────────\n")
	fmt.Fprintf(d.out, "turns:    %d sent, %d replied, %d failed, in %s wall time\n", tasks, replied, tasks-replied, wall.Round(time.Millisecond))
	// A real CLI takes as long as it takes: --think is the simulated
	// agents' alone.
	incl := "the agent's turn and queueing"
	if !d.real {
		incl = d.opts.Think.String() + " agent think time and queueing"
	}
	fmt.Fprintf(d.out, "latency:  p50 %s  p90 %s  max %s  (queued → replied, incl. %s)\n",
		pct(0.5).Round(time.Millisecond), pct(0.9).Round(time.Millisecond), pct(1).Round(time.Millisecond), incl)
	var per []string
	for _, a := range d.agents {
		per = append(per, fmt.Sprintf("%s %d", a, perAgent[a]))
	}
	fmt.Fprintf(d.out, "per agent: %s\n", strings.Join(per, ", "))
	for _, err := range d.errs {
		fmt.Fprintf(d.out, "error:    %v\n", err)
	}
	gw := d.fab.Gateway
	if st, err := gw.JetStream().Stream(context.Background(), events.Stream); err == nil {
		if info, err := st.Info(context.Background()); err == nil {
			fmt.Fprintf(d.out, "events:   %d in stream %s (%.1f per turn)\n", info.State.Msgs, events.Stream, float64(info.State.Msgs)/float64(max(1, tasks)))
		}
	}
	u := gw.NATSURL()
	fmt.Fprintf(d.out, "\ntap what just happened (go install github.com/nats-io/natscli/nats@v0.5.0):\n")
	fmt.Fprintf(d.out, "  nats --server %s stream view %s --subject 'fleet.agent.%s.>'\n", u, events.Stream, d.agents[0])
	fmt.Fprintf(d.out, "  nats --server %s sub --stream %s --all 'fleet.agent.*.replied'\n", u, events.Stream)
	fmt.Fprintf(d.out, "  nats --server %s kv ls fleet_roster\n", u)
	fmt.Fprintf(d.out, "  fleetd tail --nats %s --since all\n", u)
	if !d.opts.Keep {
		fmt.Fprintf(d.out, "  (these work while it runs: add --keep to stay up)\n")
	}
}

func (d *run) explore(ctx context.Context) {
	gw := d.fab.Gateway
	fmt.Fprintf(d.out, "\nstaying up (--keep). Try:\n")
	fmt.Fprintf(d.out, "  fleetd send --url http://%s --to role:%s \"one more task\"\n", gw.HTTPAddr(), d.roleNames[len(d.roleNames)-1])
	fmt.Fprintf(d.out, "  fleetd roster --url http://%s\n", gw.HTTPAddr())
	fmt.Fprintf(d.out, "  open http://%s/ in a browser: the dashboard, live and as of any point\n", gw.HTTPAddr())
	fmt.Fprintf(d.out, "  nats --server %s sub 'fleet.>'\n", gw.NATSURL())
	fmt.Fprintf(d.out, "Ctrl-C to stop.\n")
	<-ctx.Done()
}

func (d *run) close() {
	if d.fab != nil {
		d.fab.Close()
	}
	if d.opts.Dir == "" && !d.opts.Keep && d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// isTerminal says whether w is a character device (a terminal), where the
// roster can be redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
