package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/fleetd/fleetd/gateway"
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
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// DemoCmd runs the whole fabric on this machine with nothing installed:
// embedded NATS, a built-in herdr-protocol server with real PTY panes,
// agents in two roles, and a lead fanning tasks out through the HTTP shim.
type DemoCmd struct {
	Agents  int           `help:"How many agents, split over two roles (w-claude, w-local)." default:"4"`
	Tasks   int           `help:"How many tasks the lead fans out." default:"12"`
	Think   time.Duration `help:"How long a simulated agent works on a task." default:"1s"`
	Kind    string        `help:"Agents: sim (simulated Claude Code), claude (the real one, against a built-in fake API), auto (claude when it is on PATH)." default:"sim" enum:"auto,sim,claude"`
	Keep    bool          `help:"Stay up after the run, for exploring with nats and fleetd commands (Ctrl-C to stop)."`
	Dir     string        `help:"Where to keep the demo's data (default: a temp dir, removed at the end unless --keep)." type:"path"`
	Timeout time.Duration `help:"Give up on the run after this long." default:"3m"`
	Plain   bool          `help:"Print progress as plain lines even on a terminal."`
}

// demoRun is one demo's moving parts.
type demoRun struct {
	cmd    *DemoCmd
	out    io.Writer
	dir    string
	real   bool
	fab    *fabric
	gw     *gateway.Gateway
	herdr  *herdrtest.Server
	api    *fakeapi.Server
	agents []string
	client *leadshim.Client

	mu      sync.Mutex
	results []leadshim.Envelope
	errs    []error
}

// Run performs the demo and exits non-zero unless every turn replied.
func (c *DemoCmd) Run(ctx context.Context, g *Globals) error {
	if c.Agents < 2 || c.Tasks < 1 {
		return errors.New("demo: need at least 2 agents and 1 task")
	}
	d := &demoRun{cmd: c, out: os.Stdout}
	switch c.Kind {
	case "claude":
		if _, err := exec.LookPath("claude"); err != nil {
			return errors.New("demo: --kind claude needs the claude CLI on PATH (npm install @anthropic-ai/claude-code)")
		}
		d.real = true
	case "auto":
		_, err := exec.LookPath("claude")
		d.real = err == nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	err := d.run(ctx, g)
	d.close()
	return err
}

func (d *demoRun) run(ctx context.Context, g *Globals) error {
	if err := d.setup(ctx, g); err != nil {
		return err
	}
	if err := d.spawn(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := d.fanOut(ctx); err != nil {
		return err
	}
	d.summary(time.Since(start))
	if d.cmd.Keep {
		d.explore(ctx)
	}
	if n := d.failed(); n > 0 {
		return exitError{code: 1, err: fmt.Errorf("demo: %d of %d turns did not reply", n, d.cmd.Tasks)}
	}
	return nil
}

func (d *demoRun) step(format string, args ...any) {
	fmt.Fprintf(d.out, "▸ "+format+"\n", args...)
}

func (d *demoRun) setup(ctx context.Context, g *Globals) error {
	d.dir = d.cmd.Dir
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "fleetd-demo-")
		if err != nil {
			return err
		}
		d.dir = dir
	}
	fab, err := startFabric(ctx, fabricConfig{Dir: d.dir, Host: "demo", SyncAlways: true, Logger: d.logger(g), Roles: d.roles})
	if err != nil {
		return err
	}
	d.fab, d.herdr, d.api, d.gw, d.client = fab, fab.herdr, fab.api, fab.gw, fab.client
	kind := "simulated Claude Code agents (fleetd sim-agent, firing the real hooks)"
	if d.real {
		kind = "real Claude Code agents against a built-in fake Anthropic API"
	}
	d.step("fleetd demo: %d %s, %d tasks", d.cmd.Agents, kind, d.cmd.Tasks)
	d.step("data in %s; built-in herdr on %s; fake API at %s", d.dir, d.herdr.Path(), d.api.URL())
	d.step("fleetd up: NATS %s, lead shim http://%s", d.gw.NATSURL(), d.gw.HTTPAddr())
	return nil
}

// logger keeps the demo's screen for the demo: components log warnings
// and errors only, unless --log-level asks for more.
func (d *demoRun) logger(g *Globals) *slog.Logger {
	if g.LogLevel == "info" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return g.Logger()
}

// roles are the demo's two roles: w-claude (clean, on the subscription)
// and w-local (a gateway role pointed at the fake API). With real Claude
// Code both must reach the fake API, so both are gateway roles.
func (d *demoRun) roles(api *fakeapi.Server) (roles.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return roles.Config{}, err
	}
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
		for _, name := range []string{"w-claude", "w-local"} {
			cfg.Roles[name] = roles.Role{EnvClass: roles.EnvGateway, BaseURL: api.URL(), Env: env, Tier: 2,
				Command: []string{"claude", "--settings", "{settings}"}}
		}
	} else {
		think := d.cmd.Think.String()
		cfg.Roles["w-claude"] = roles.Role{EnvClass: roles.EnvClean, Tier: 2, Env: map[string]string{"HERDR_AGENT": "claude"},
			Command: []string{exe, "sim-agent", "--think", think, "--model", "claude-sim-sonnet"}}
		cfg.Roles["w-local"] = roles.Role{EnvClass: roles.EnvGateway, BaseURL: api.URL(), Tier: 2,
			Env: map[string]string{"HERDR_AGENT": "claude"}, Cap: max(1, d.cmd.Agents/2),
			Command: []string{exe, "sim-agent", "--think", think, "--model", "local-sim"}}
	}
	return cfg, cfg.Validate()
}

func (d *demoRun) spawn(ctx context.Context) error {
	cwd := d.dir
	if d.real {
		cwd = filepath.Join(d.dir, "work")
	}
	var specs []agentSpec
	for i := range d.cmd.Agents {
		role := []string{"w-claude", "w-local"}[i%2]
		name := fmt.Sprintf("%s-%d", role, i/2+1)
		specs = append(specs, agentSpec{Role: role, Name: name, Cwd: cwd})
		d.agents = append(d.agents, name)
	}
	if err := d.fab.spawn(ctx, specs); err != nil {
		return err
	}
	d.step("spawned %s", strings.Join(d.agents, ", "))
	// Ready = each agent's session started (its hook said so) and idle.
	if err := d.fab.waitReady(ctx, d.agents); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.step("all %d agents ready", len(d.agents))
	return nil
}

// fanOut is the lead: every task at once through the blocking POST
// /message, half to each role; the fabric queues what it cannot start.
func (d *demoRun) fanOut(ctx context.Context) error {
	d.step("lead: sending %d tasks at once (POST /message, blocking) to role:w-claude and role:w-local", d.cmd.Tasks)
	var wg sync.WaitGroup
	for i := range d.cmd.Tasks {
		wg.Go(func() {
			role := []string{"w-claude", "w-local"}[i%2]
			msg := leadshim.Message{To: "role:" + role, From: "lead", Text: fmt.Sprintf("task %d: summarise module %c", i+1, 'A'+i%26), Timeout: "2m"}
			var env leadshim.Envelope
			err := d.client.Do(ctx, http.MethodPost, "/message", msg, &env)
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
	return nil
}

func (d *demoRun) progress(ctx context.Context, done <-chan struct{}) {
	live := !d.cmd.Plain && isTerminal(os.Stdout)
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
func (d *demoRun) drawRoster(prev int) int {
	if prev > 0 {
		fmt.Fprintf(d.out, "\x1b[%dA\x1b[J", prev)
	}
	d.mu.Lock()
	doneN := len(d.results) + len(d.errs)
	d.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "  %-12s %-9s %-8s %-6s %s\n", "AGENT", "ROLE", "STATUS", "QUEUE", "TOKENS in/out")
	for _, a := range d.agents {
		r, _ := d.gw.Views.Agent(a)
		fmt.Fprintf(&b, "  %-12s %-9s %-8s %-6d %d/%d\n", a, r.Role, r.Status, r.QueueDepth, r.Tokens.In, r.Tokens.Out)
	}
	fmt.Fprintf(&b, "  turns finished: %d/%d\n", doneN, d.cmd.Tasks)
	fmt.Fprint(d.out, b.String())
	return strings.Count(b.String(), "\n")
}

func (d *demoRun) printResults(printed *int, quiet bool) {
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

func (d *demoRun) failed() int {
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

func (d *demoRun) summary(wall time.Duration) {
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
	fmt.Fprintf(d.out, "\n── summary ─────────────────────────────────────────────\n")
	fmt.Fprintf(d.out, "turns:    %d sent, %d replied, %d failed, in %s wall time\n", d.cmd.Tasks, replied, d.cmd.Tasks-replied, wall.Round(time.Millisecond))
	fmt.Fprintf(d.out, "latency:  p50 %s  p90 %s  max %s  (queued → replied, incl. %s agent think time and queueing)\n",
		pct(0.5).Round(time.Millisecond), pct(0.9).Round(time.Millisecond), pct(1).Round(time.Millisecond), d.cmd.Think)
	var per []string
	for _, a := range d.agents {
		per = append(per, fmt.Sprintf("%s %d", a, perAgent[a]))
	}
	fmt.Fprintf(d.out, "per agent: %s\n", strings.Join(per, ", "))
	for _, err := range d.errs {
		fmt.Fprintf(d.out, "error:    %v\n", err)
	}
	if st, err := d.gw.JetStream().Stream(context.Background(), events.Stream); err == nil {
		if info, err := st.Info(context.Background()); err == nil {
			fmt.Fprintf(d.out, "events:   %d in stream %s (%.1f per turn)\n", info.State.Msgs, events.Stream, float64(info.State.Msgs)/float64(max(1, d.cmd.Tasks)))
		}
	}
	u := d.gw.NATSURL()
	fmt.Fprintf(d.out, "\ntap what just happened (go install github.com/nats-io/natscli/nats@v0.5.0):\n")
	fmt.Fprintf(d.out, "  nats --server %s stream view %s --subject 'fleet.agent.%s.>'\n", u, events.Stream, d.agents[0])
	fmt.Fprintf(d.out, "  nats --server %s sub --stream %s --all 'fleet.agent.*.replied'\n", u, events.Stream)
	fmt.Fprintf(d.out, "  nats --server %s kv ls fleet_roster\n", u)
	fmt.Fprintf(d.out, "  fleetd tail --nats %s --since all\n", u)
	if !d.cmd.Keep {
		fmt.Fprintf(d.out, "  (these work while it runs: add --keep to stay up)\n")
	}
}

func (d *demoRun) explore(ctx context.Context) {
	u := d.gw.NATSURL()
	fmt.Fprintf(d.out, "\nstaying up (--keep). Try:\n")
	fmt.Fprintf(d.out, "  fleetd send --url http://%s --to role:w-local \"one more task\"\n", d.gw.HTTPAddr())
	fmt.Fprintf(d.out, "  fleetd roster --url http://%s\n", d.gw.HTTPAddr())
	fmt.Fprintf(d.out, "  nats --server %s sub 'fleet.>'\n", u)
	fmt.Fprintf(d.out, "Ctrl-C to stop.\n")
	<-ctx.Done()
}

func (d *demoRun) close() {
	if d.fab != nil {
		d.fab.close()
	}
	if d.cmd.Dir == "" && !d.cmd.Keep && d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
