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

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
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
	// KindCodex runs the real Codex CLI against the fake API (its OpenAI
	// Responses protocol); KindMixed real Claude Code (w-claude) beside
	// real Codex (w-local).
	KindCodex = "codex"
	KindMixed = "mixed"
)

// Options are one demo run's settings: `fleetd demo`'s flags, and what
// the CLI knows of its process (where to print, how to log, its version
// and executable).
type Options struct {
	// Agents (at least 2) are split over the roles w-claude and w-local.
	Agents int
	// Tasks (at least 1) is how many tasks the lead fans out at once.
	Tasks int
	// Think is how long a simulated agent works on a task.
	Think time.Duration
	// Kind is KindSim (default), KindClaude, KindCodex, KindMixed or KindAuto.
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
	if !slices.Contains([]string{KindSim, KindClaude, KindAuto, KindCodex, KindMixed}, o.Kind) {
		errs = append(errs, fmt.Errorf("demo: unknown kind %q (want %s, %s, %s, %s or %s)", o.Kind, KindSim, KindClaude, KindCodex, KindMixed, KindAuto))
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("demo: the timeout must be positive"))
	}
	return errors.Join(errs...)
}

// Run performs the demo: it starts a Fabric, spawns the agents, fans the
// tasks out through the lead shim and prints a summary. It fails with
// ErrNoReply unless every turn replied.
func Run(ctx context.Context, opts Options) error {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	d := &run{opts: opts, out: opts.Out}
	need := map[string][]string{KindClaude: {"claude"}, KindCodex: {"codex"}, KindMixed: {"claude", "codex"}}[opts.Kind]
	for _, cli := range need {
		if _, err := exec.LookPath(cli); err != nil {
			return fmt.Errorf("demo: --kind %s needs the %s CLI on PATH (%s)", opts.Kind, cli, map[string]string{
				"claude": "npm install @anthropic-ai/claude-code@" + fakeapi.ClaudeVersion + ", or export PATH=\"$(.ci/install-claude.sh):$PATH\"",
				"codex":  "npm install @openai/codex@" + fakeapi.CodexVersion + ", or export PATH=\"$(.ci/install-codex.sh):$PATH\"",
			}[cli])
		}
	}
	switch opts.Kind {
	case KindClaude, KindCodex, KindMixed:
		d.real = true
	case KindAuto:
		_, err := exec.LookPath("claude")
		d.real = err == nil
	}
	if d.exe = opts.Fleetd; d.exe == "" && !d.real {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo: find fleetd: %w", err)
		}
		d.exe = exe
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	err := d.run(ctx)
	d.close()
	return err
}

// run is one demo's moving parts.
type run struct {
	opts   Options
	out    io.Writer
	exe    string
	dir    string
	real   bool
	fab    *Fabric
	agents []string

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
	fab, err := StartFabric(ctx, FabricConfig{Dir: d.dir, Host: "demo", Version: d.opts.Version, SyncAlways: true,
		Logger: d.opts.Logger, Roles: d.roles})
	if err != nil {
		return err
	}
	d.fab = fab
	kind := "simulated Claude Code agents (fleetd sim-agent, firing the real hooks)"
	switch {
	case d.opts.Kind == KindCodex:
		kind = "real Codex agents against a built-in fake model API"
	case d.opts.Kind == KindMixed:
		kind = "real Claude Code (w-claude) and real Codex (w-local) agents against a built-in fake model API"
	case d.real:
		kind = "real Claude Code agents against a built-in fake Anthropic API"
	}
	d.step("fleetd demo: %d %s, %d tasks", d.opts.Agents, kind, d.opts.Tasks)
	d.step("data in %s; built-in herdr on %s; fake API at %s", d.dir, fab.HerdrPath(), fab.API.URL())
	d.step("fleetd up: NATS %s, lead shim http://%s", fab.Gateway.NATSURL(), fab.Gateway.HTTPAddr())
	d.step("dashboard: http://%s/ (watch the fleet work, live)", fab.Gateway.HTTPAddr())
	return nil
}

// roles are the demo's two roles: w-claude (clean, on the subscription)
// and w-local (a gateway role pointed at the fake API). With real Claude
// Code both must reach the fake API, so both are gateway roles.
func (d *run) roles(api *fakeapi.Server) (roles.Config, error) {
	cfg := roles.Config{Roles: map[string]roles.Role{}}
	if d.real {
		home := filepath.Join(d.dir, "claude-home")
		work := filepath.Join(d.dir, "work")
		if err := os.MkdirAll(work, 0o755); err != nil {
			return cfg, err
		}
		if err := fakeapi.WriteClaudeHome(home, work); err != nil {
			return cfg, err
		}
		env := map[string]string{"HOME": home, "ANTHROPIC_AUTH_TOKEN": "test", "DISABLE_TELEMETRY": "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
		// Each role's CLI: Claude Code, or Codex (its own CODEX_HOME,
		// which fleetd writes, pointed at the fake's Responses API).
		clis := map[string][2]string{KindCodex: {roles.KindCodex, roles.KindCodex}, KindMixed: {roles.KindClaude, roles.KindCodex}}[d.opts.Kind]
		if clis[0] == "" {
			clis = [2]string{roles.KindClaude, roles.KindClaude}
		}
		for i, name := range []string{"w-claude", "w-local"} {
			r := roles.Role{Kind: clis[i], EnvClass: roles.EnvGateway, BaseURL: api.URL(), Env: env, Tier: 2,
				Command: []string{"claude", "--settings", "{settings}"}}
			if clis[i] == roles.KindCodex {
				r.BaseURL, r.Model, r.Command = api.URL()+"/v1", "fake-model", []string{"codex", "{resume}"}
				r.Env = map[string]string{"HOME": home, "OPENAI_API_KEY": "sk-fake"}
			}
			cfg.Roles[name] = r
		}
	} else {
		think := d.opts.Think.String()
		cfg.Roles["w-claude"] = roles.Role{EnvClass: roles.EnvClean, Tier: 2, Env: map[string]string{"HERDR_AGENT": "claude"},
			Command: []string{d.exe, "sim-agent", "--think", think, "--model", "claude-sim-sonnet"}}
		cfg.Roles["w-local"] = roles.Role{EnvClass: roles.EnvGateway, BaseURL: api.URL(), Tier: 2,
			Env: map[string]string{"HERDR_AGENT": "claude"}, Cap: max(1, d.opts.Agents/2),
			Command: []string{d.exe, "sim-agent", "--think", think, "--model", "local-sim"}}
	}
	return cfg, cfg.Validate()
}

func (d *run) spawn(ctx context.Context) error {
	cwd := d.dir
	if d.real {
		cwd = filepath.Join(d.dir, "work")
	}
	var specs []AgentSpec
	for i := range d.opts.Agents {
		role := []string{"w-claude", "w-local"}[i%2]
		name := fmt.Sprintf("%s-%d", role, i/2+1)
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
// /message, half to each role; the fabric queues what it cannot start.
func (d *run) fanOut(ctx context.Context) {
	d.step("lead: sending %d tasks at once (POST /message, blocking) to role:w-claude and role:w-local", d.opts.Tasks)
	var wg sync.WaitGroup
	for i := range d.opts.Tasks {
		wg.Go(func() {
			role := []string{"w-claude", "w-local"}[i%2]
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
	fmt.Fprintf(d.out, "latency:  p50 %s  p90 %s  max %s  (queued → replied, incl. %s agent think time and queueing)\n",
		pct(0.5).Round(time.Millisecond), pct(0.9).Round(time.Millisecond), pct(1).Round(time.Millisecond), d.opts.Think)
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
	fmt.Fprintf(d.out, "  fleetd send --url http://%s --to role:w-local \"one more task\"\n", gw.HTTPAddr())
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
