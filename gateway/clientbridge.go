package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/roles"
)

// ClientBridge is a bridge to this machine's herdr for a command that runs
// no gateway — fleetd spawn and adopt, orchestrate --spawn — so its agents
// launch exactly as the gateway's do and belong to the gateway that
// watches their panes.
type ClientBridge struct {
	// RolesFile is the roles file (default: the built-in roles).
	RolesFile string
	// Socket is herdr's socket; default as herdr resolves it.
	Socket string
	// Host is the agents' host; default the host whose gateway drives
	// that herdr (Owner), so the agent belongs to a gateway that watches
	// its pane.
	Host string
	// NATSURL (default nats.DefaultURL), Creds and NATSToken are what
	// this command and panes' hooks connect with; FleetURL is the lead
	// shim's.
	NATSURL   string
	Creds     string
	NATSToken string
	FleetURL  string
	// DataDir holds the spool and the agents' worktrees; Settings is the
	// hooks settings file (default <DataDir>/claude-settings.json).
	DataDir  string
	Settings string
	Logger   *slog.Logger

	// Bridge is the bridge Open made: not running, enough to spawn or
	// adopt.
	Bridge *herdrbridge.Bridge
	nc     *nats.Conn
}

// Open loads the roles, resolves herdr's socket and the hooks settings
// file (written, as 'fleetd hooks settings' would, when it does not exist
// yet) before it connects — so a machine without herdr says so first —
// then connects to NATS and builds Bridge. Close releases it.
func (c *ClientBridge) Open(ctx context.Context) error {
	rc, err := roles.Load(c.RolesFile)
	if err != nil {
		return err
	}
	if err := c.prepare(); err != nil {
		return err
	}
	nc, js, err := natsauth.Connect(c.NATSURL, "fleetd herdr", c.Creds, c.NATSToken)
	if err != nil {
		return err
	}
	if c.Bridge, err = c.open(ctx, js, rc); err != nil {
		nc.Close()
		return err
	}
	c.nc = nc
	return nil
}

// Close closes the NATS connection Open made.
func (c *ClientBridge) Close() {
	if c.nc != nil {
		c.nc.Close()
	}
}

// SessionSpawner starts and closes a job's session panes through Bridge,
// finding its agents in agents (orchestrate --spawn).
func (c *ClientBridge) SessionSpawner(agents AgentLookup) *SessionSpawner {
	return &SessionSpawner{Bridge: c.Bridge, Herdr: herdrapi.New(c.Socket), Agents: agents, Host: c.Bridge.Host()}
}

// prepare resolves the socket and writes missing hooks settings.
func (c *ClientBridge) prepare() error {
	if c.Socket == "" {
		var err error
		if c.Socket, err = herdrapi.SocketPath(os.Getenv); err != nil {
			return err
		}
	}
	if c.Settings == "" {
		c.Settings = filepath.Join(c.DataDir, "claude-settings.json")
	}
	if _, err := os.Stat(c.Settings); err == nil {
		return nil
	}
	exe, err := claudehook.ThisFleetd()
	if err == nil {
		err = claudehook.SettingsConfig{Fleetd: exe, DefaultMode: "default"}.WriteFile(c.Settings)
	}
	if err != nil {
		return fmt.Errorf("write hooks settings %s: %w", c.Settings, err)
	}
	return nil
}

// open builds the bridge over js, for the owner of herdr's socket unless
// Host is set.
func (c *ClientBridge) open(ctx context.Context, js jetstream.JetStream, rc roles.Config) (*herdrbridge.Bridge, error) {
	host := c.Host
	if host == "" {
		machine, _ := os.Hostname()
		var err error
		log := events.New(js, events.Options{Source: "fleetd/cli"})
		if host, err = Owner(ctx, log, machine, c.Socket, time.Minute, time.Now()); err != nil {
			return nil, err
		}
	}
	natsURL := c.NATSURL
	if natsURL == "" {
		natsURL = nats.DefaultURL
	}
	return herdrbridge.NewBridge(herdrbridge.BridgeConfig{
		Host: host, SocketPath: c.Socket, Roles: rc, Logger: c.Logger,
		Log: events.New(js, events.Options{Source: "fleetd/" + host + "/cli"}),
		Launch: herdrbridge.Launch{NATSURL: natsURL, NATSCreds: c.Creds, AgentCreds: PaneCreds(c.Creds),
			NATSToken: PaneToken(c.Creds, c.NATSToken), FleetURL: c.FleetURL,
			SpoolDir: filepath.Join(c.DataDir, "spool"), Settings: c.Settings, StateDir: c.DataDir,
			HookCommand: hookCommand},
	})
}

// hookCommand runs this fleetd's hook of a name, as its hooks settings do
// (Codex's hooks.json is written per agent from it).
func hookCommand(arg string) string {
	exe, err := claudehook.ThisFleetd()
	if err != nil {
		exe = "fleetd"
	}
	return claudehook.SettingsConfig{Fleetd: exe}.Command(arg)
}
