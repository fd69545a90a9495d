package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// Fabric is a whole fleetd on this machine with nothing installed: the
// built-in herdr-protocol server with real PTY panes, a fake Anthropic API
// and a gateway over embedded NATS with a lead shim on a free port. `fleetd
// demo` and `fleetd bench` both run on it.
type Fabric struct {
	// Herdr is the built-in herdr-protocol server the agents' panes run
	// in; nil when FabricConfig.HerdrPath named one already serving.
	Herdr *herdrtest.Server
	// herdrPath is the socket of the herdr the gateway uses.
	herdrPath string
	// API is the fake Anthropic Messages API gateway roles point at.
	API *fakeapi.Server
	// Gateway is the host's fleetd: NATS, the log, projections, the shim.
	Gateway *gateway.Gateway
	// Client talks to Gateway's lead shim, as the lead does.
	Client *leadshim.Client
}

// FabricConfig says how to start a Fabric.
type FabricConfig struct {
	// Dir holds the JetStream store (Dir/data). Required.
	Dir string
	// Host is the gateway's host name in the fleet (default "demo").
	Host string
	// Version is what the gateway announces (fleetd's version).
	Version    string
	SyncAlways bool
	// Logger is the components' logger (default slog.Default()).
	Logger *slog.Logger
	// Roles builds the roles once the fake API runs, so gateway roles can
	// point at it. Required.
	Roles func(api *fakeapi.Server) (roles.Config, error)
	// HerdrPath, when set, is the socket of a herdr already serving (a
	// `fleetd dev-herdr` process, say) for the gateway to use instead of
	// starting the built-in one in this process. The bench runs it so:
	// a real herdr is a process of its own, and its panes' output would
	// otherwise share the gateway's Go scheduler.
	HerdrPath string
	// Cols and Rows are the size of the built-in herdr's panes (default
	// herdrtest's, 80×24). The real CLIs' screens were measured at
	// 120×40, which the demo gives them.
	Cols, Rows int
	// Start runs each pane's program for the built-in herdr (default: a
	// PTY of this process); agentapi.StartTerminal runs it under its own
	// agentapi server (the agentapi runtime).
	Start func(herdrtest.StartSpec) (herdrtest.Terminal, error)
	// SubmitTimeout is the gateway's wait for proof a typed prompt was
	// submitted (default the gateway's, 5 s).
	SubmitTimeout time.Duration
	// Token, when set, is the lead shim's bearer token (the dashboard then
	// asks a browser to sign in); Client presents it.
	Token string
}

func (c *FabricConfig) setDefaults() {
	if c.Host == "" {
		c.Host = "demo"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every missing field at once.
func (c FabricConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("fabric: Dir is required"))
	}
	if c.Roles == nil {
		errs = append(errs, errors.New("fabric: Roles is required"))
	}
	return errors.Join(errs...)
}

// StartFabric starts herdr, the fake API and the gateway, in that order.
// On an error it stops what it started; otherwise the caller closes the
// Fabric.
func StartFabric(ctx context.Context, cfg FabricConfig) (f *Fabric, err error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f = &Fabric{}
	// The fabric so far is closed on a failure; a "return nil, err" has
	// set the result to nil by then, so the defer holds its own pointer.
	started := f
	defer func() {
		if err != nil {
			started.Close()
			f = nil
		}
	}()
	if f.herdrPath = cfg.HerdrPath; f.herdrPath == "" {
		if err := f.startHerdr(ctx, cfg.Cols, cfg.Rows, cfg.Start); err != nil {
			return nil, err
		}
	}
	f.API = fakeapi.New(fakeapi.Config{})
	if err := f.API.Start(ctx); err != nil {
		return nil, fmt.Errorf("fake Anthropic API: %w", err)
	}
	rc, err := cfg.Roles(f.API)
	if err != nil {
		return nil, err
	}
	natsCfg := embeddednats.Config{
		DataDir: filepath.Join(cfg.Dir, "data"), ServerName: cfg.Host, Listen: "127.0.0.1:0",
		SyncAlways: cfg.SyncAlways,
	}
	f.Gateway = gateway.New(gateway.Config{
		Version: cfg.Version,
		Host:    cfg.Host, NATS: natsCfg, HTTP: "127.0.0.1:0", HerdrPath: f.herdrPath, Roles: &rc,
		Heartbeat: 5 * time.Second, SubmitTimeout: cfg.SubmitTimeout, Logger: cfg.Logger, Token: cfg.Token,
	})
	if err := f.Gateway.Start(ctx); err != nil {
		return nil, err
	}
	f.Client = leadshim.NewClient("http://"+f.Gateway.HTTPAddr(), cfg.Token)
	return f, nil
}

// startHerdr starts the built-in herdr in this process.
func (f *Fabric) startHerdr(ctx context.Context, cols, rows int, start func(herdrtest.StartSpec) (herdrtest.Terminal, error)) error {
	// Unix socket paths are short-limited: keep herdr's under /tmp.
	sockDir, err := os.MkdirTemp("", "fleetd-herdr-")
	if err != nil {
		return err
	}
	f.Herdr, err = herdrtest.New(herdrtest.Config{SocketPath: filepath.Join(sockDir, "herdr.sock"), Cols: cols, Rows: rows, Start: start})
	if err != nil {
		os.RemoveAll(sockDir)
		return err
	}
	f.herdrPath = f.Herdr.Path()
	if err := f.Herdr.Start(ctx); err != nil {
		return fmt.Errorf("built-in herdr: %w", err)
	}
	return nil
}

// HerdrPath is the socket of the herdr the agents' panes run in.
func (f *Fabric) HerdrPath() string { return f.herdrPath }

// AgentSpec is one agent to spawn: its role, its name (the agent id) and
// the directory its pane starts in.
type AgentSpec struct {
	Role, Name, Cwd string
}

// Spawn starts the agents in panes of the built-in herdr, as the lead's
// children.
func (f *Fabric) Spawn(ctx context.Context, specs []AgentSpec) error {
	for _, s := range specs {
		if _, err := f.Gateway.Bridge.Spawn(ctx, herdrbridge.SpawnRequest{Role: s.Role, Name: s.Name, Cwd: s.Cwd, Parent: "lead"}); err != nil {
			return fmt.Errorf("spawn %s: %w", s.Name, err)
		}
	}
	return nil
}

// WaitReady waits until every agent's session started (its hook said so)
// and it shows ready, or ctx ends.
func (f *Fabric) WaitReady(ctx context.Context, agents []string) error {
	for {
		ready := 0
		for _, a := range agents {
			// Claude Code's hooks report its session as it starts; Codex
			// starts one only with its first prompt, and is ready once
			// its gateway saw its empty composer (an idle status).
			if r, ok := f.Gateway.Views.Agent(a); ok && (r.SessionID != "" || r.Kind != roles.KindClaude) && r.Status.Ready() {
				ready++
			}
		}
		if ready == len(agents) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d agents became ready: %w", ready, len(agents), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops everything that started and removes herdr's socket
// directory. Idempotent.
func (f *Fabric) Close() {
	if f.Gateway != nil {
		f.Gateway.Close()
	}
	if f.Herdr != nil {
		f.Herdr.Close()
		os.RemoveAll(filepath.Dir(f.Herdr.Path()))
	}
	if f.API != nil {
		f.API.Close()
	}
}
