package main

import (
	"context"
	"fmt"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/leadshim"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/roles"
)

// fabric is a whole fleetd on this machine with nothing installed: the
// built-in herdr-protocol server with real PTY panes, a fake Anthropic API
// and a gateway over embedded NATS with a lead shim on a free port. `fleetd
// demo` and `fleetd bench` both run on it.
type fabric struct {
	herdr  *herdrtest.Server
	api    *fakeapi.Server
	gw     *gateway.Gateway
	client *leadshim.Client
}

// fabricConfig says how to start a fabric.
type fabricConfig struct {
	// Dir holds the JetStream store (Dir/data). Required.
	Dir        string
	Host       string
	SyncAlways bool
	Logger     *slog.Logger
	// Roles builds the roles once the fake API runs, so gateway roles can
	// point at it.
	Roles func(api *fakeapi.Server) (roles.Config, error)
}

// startFabric starts herdr, the fake API and the gateway. On an error it
// stops what it started.
func startFabric(ctx context.Context, cfg fabricConfig) (f *fabric, err error) {
	f = &fabric{}
	defer func() {
		if err != nil {
			f.close()
			f = nil
		}
	}()
	// Unix socket paths are short-limited: keep herdr's under /tmp.
	sockDir, err := os.MkdirTemp("", "fleetd-herdr-")
	if err != nil {
		return nil, err
	}
	f.herdr, err = herdrtest.New(herdrtest.Config{SocketPath: filepath.Join(sockDir, "herdr.sock")})
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, err
	}
	if err := f.herdr.Start(ctx); err != nil {
		return nil, fmt.Errorf("built-in herdr: %w", err)
	}
	f.api = fakeapi.New(fakeapi.Config{})
	if err := f.api.Start(ctx); err != nil {
		return nil, fmt.Errorf("fake Anthropic API: %w", err)
	}
	rc, err := cfg.Roles(f.api)
	if err != nil {
		return nil, err
	}
	natsCfg := embeddednats.Config{
		DataDir: filepath.Join(cfg.Dir, "data"), ServerName: cfg.Host, Listen: "127.0.0.1:0",
		SyncAlways: cfg.SyncAlways,
	}
	f.gw = gateway.New(gateway.Config{
		Version: version,
		Host:    cfg.Host, NATS: natsCfg, HTTP: "127.0.0.1:0", HerdrPath: f.herdr.Path(), Roles: &rc,
		Heartbeat: 5 * time.Second, Logger: cfg.Logger,
	})
	if err := f.gw.Start(ctx); err != nil {
		return nil, err
	}
	f.client = leadshim.NewClient("http://"+f.gw.HTTPAddr(), "")
	return f, nil
}

// agentSpec is one agent to spawn.
type agentSpec struct {
	Role, Name, Cwd string
}

// spawn starts the agents in panes of the built-in herdr.
func (f *fabric) spawn(ctx context.Context, specs []agentSpec) error {
	for _, s := range specs {
		if _, err := f.gw.Bridge.Spawn(ctx, herdrbridge.SpawnRequest{Role: s.Role, Name: s.Name, Cwd: s.Cwd, Parent: "lead"}); err != nil {
			return fmt.Errorf("spawn %s: %w", s.Name, err)
		}
	}
	return nil
}

// waitReady waits until every agent's session started (its hook said so)
// and it shows ready.
func (f *fabric) waitReady(ctx context.Context, agents []string) error {
	for {
		ready := 0
		for _, a := range agents {
			if r, ok := f.gw.Views.Agent(a); ok && r.SessionID != "" && r.Status.Ready() {
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

// close stops everything that started. Idempotent.
func (f *fabric) close() {
	if f.gw != nil {
		f.gw.Close()
	}
	if f.herdr != nil {
		f.herdr.Close()
		os.RemoveAll(filepath.Dir(f.herdr.Path()))
	}
	if f.api != nil {
		f.api.Close()
	}
}
