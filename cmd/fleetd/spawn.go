package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/clitable"
)

// SpawnCmd starts an agent of a role in a new pane of this host's herdr.
type SpawnCmd struct {
	Role      string            `help:"Role from the roles file." required:""`
	Name      string            `help:"Agent id (unique fleet-wide)." required:""`
	Model     string            `help:"Model, instead of the role's."`
	Cwd       string            `help:"Working directory of the pane: an existing directory under the role's cwd_roots (default: your home, fleetd's working directory, the temp directory), never /; not for a role with a worktree (its agents work in their own)." type:"path"`
	Env       map[string]string `help:"Extra pane environment (KEY=VALUE); checked against the role's subscription boundary."`
	Parent    string            `help:"Agent or job this one works for."`
	Tier      int               `help:"Tier (default: the role's)."`
	Session   string            `help:"Named session the agent serves."`
	SplitFrom string            `help:"Split this pane instead of opening a new tab." placeholder:"PANE"`
	Wait      time.Duration     `help:"How long to wait for the agent's Claude Code session to start; a spawn whose agent does not start fails with what its pane shows, and leaves nothing behind." default:"60s"`
	NoWait    bool              `help:"Return once the agent's command is typed, without waiting for its session to start (the roster says starting, or failed to start and why)."`
	herdrFlags
}

// herdrFlags are what a command that drives this host's herdr needs.
type herdrFlags struct {
	Roles    string `help:"Roles file (JSON)." env:"FLEET_ROLES" type:"path"`
	Herdr    string `help:"herdr socket path (default: as herdr resolves it)." env:"FLEET_HERDR_SOCKET" type:"path"`
	Runtime  string `help:"Where this host's agents run, as for 'fleetd up': herdr, agentapi (the agentapi host 'fleetd up --runtime agentapi' started for --data-dir), or auto: herdr when --herdr, HERDR_SOCKET_PATH or HERDR_SESSION is set or herdr's socket exists, else agentapi when its host answers." enum:"auto,herdr,agentapi" default:"auto" env:"FLEET_RUNTIME"`
	DataDir  string `help:"fleetd's state directory (hooks settings, spool, agents' worktrees)." default:"${default_data_dir}" env:"FLEET_DATA_DIR" type:"path"`
	Settings string `help:"Claude Code settings file with fleetd's hooks (default: <data-dir>/claude-settings.json, written by 'fleetd hooks settings' if missing)." env:"FLEET_SETTINGS" type:"path"`
}

// Run spawns the agent and prints its registration.
func (c *SpawnCmd) Run(ctx context.Context, g *Globals) error {
	cb, err := c.bridge(ctx, g)
	if err != nil {
		return err
	}
	defer cb.Close()
	wait := c.Wait
	if c.NoWait {
		wait = 0
	}
	reg, err := cb.Bridge.Spawn(ctx, herdrbridge.SpawnRequest{
		Role: c.Role, Name: c.Name, Model: c.Model, Cwd: c.Cwd, Env: c.Env,
		Parent: c.Parent, Tier: c.Tier, Session: c.Session, SplitFrom: c.SplitFrom, Wait: wait,
	})
	if err != nil {
		return err
	}
	clitable.Spawned(os.Stdout, reg, wait != 0)
	return nil
}

// bridge connects to the local herdr and to the fleet's NATS: a bridge
// that is not running, enough to spawn or adopt. Without --host it works
// for the host whose gateway drives that herdr (gateway.Owner).
func (f *herdrFlags) bridge(ctx context.Context, g *Globals) (*gateway.ClientBridge, error) {
	socket, err := f.socket(ctx)
	if err != nil {
		return nil, err
	}
	cb := &gateway.ClientBridge{RolesFile: f.Roles, Socket: socket, NATSURL: g.NATS, Creds: g.Creds, NATSToken: g.natsToken(),
		FleetURL: g.URL, DataDir: f.DataDir, Settings: f.Settings, Logger: g.Logger()}
	if g.Host != "" {
		cb.Host = g.hostName()
	}
	return cb, natsHint(cb.Open(ctx))
}

// socket is the herdr-protocol socket of this host's agent runtime: the
// agentapi host's of --data-dir when the runtime is agentapi, else
// herdr's ("" resolves it as herdr does).
func (f *herdrFlags) socket(ctx context.Context) (string, error) {
	host := agentapiHostSocket(f.DataDir)
	rt, err := chooseRuntime(f.Runtime, f.Herdr, os.Getenv, func() error {
		if hostAnswers(ctx, host) {
			return nil
		}
		return fmt.Errorf("no agentapi host answers on %s ('fleetd up --runtime agentapi --data-dir %s' starts it)", host, f.DataDir)
	})
	if err != nil {
		return "", err
	}
	if rt.Name == runtimeAgentapi {
		return host, nil
	}
	return rt.Socket, nil
}
