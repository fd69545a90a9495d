package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/gateway"
)

// UpCmd runs the fabric on this host.
type UpCmd struct {
	DataDir         string        `help:"Where the JetStream store and fleetd's state live." default:"${default_data_dir}" env:"FLEET_DATA_DIR" type:"path"`
	Listen          string        `help:"NATS client listen address for the embedded server; empty for in-process only." default:"127.0.0.1:4222" env:"FLEET_LISTEN"`
	HTTP            string        `name:"http" help:"Lead HTTP shim listen address (loopback by default; any other address needs --token)." default:"127.0.0.1:8765" env:"FLEET_HTTP"`
	TLSCert         string        `name:"tls-cert" help:"Serve the lead shim over HTTPS with this PEM certificate (with --tls-key): the token, the dashboard's cookie and the turns are then encrypted on the network. Clients use an https:// --url (and --tls-ca for a certificate no system CA signed)." env:"FLEET_TLS_CERT" type:"path" placeholder:"FILE"`
	TLSKey          string        `name:"tls-key" help:"The PEM private key of --tls-cert." env:"FLEET_TLS_KEY" type:"path" placeholder:"FILE"`
	SyncAlways      bool          `help:"fsync every JetStream write before acknowledging it." default:"true" negatable:"" env:"FLEET_SYNC_ALWAYS"`
	MaxStore        int64         `help:"Cap on JetStream file storage in bytes (0 = no cap). Near it, new sends are refused (503 store_low) so accepted turns can finish; at it, /healthz says store_full until space frees." env:"FLEET_MAX_STORE"`
	Retain          string        `help:"How much of the FLEET stream to keep beyond what open turns and live agents need: an age (7d, 36h), a size (500MB, 2GiB), both (7d,2GiB: whichever trims more) or forever. Default: 7d, and half of --max-store when it is set." env:"FLEET_RETAIN"`
	RetainTurns     string        `help:"How long a final turn stays in fleet_turns (GET /message/{id} answers for it), or forever." default:"7d" env:"FLEET_RETAIN_TURNS"`
	RecreateStream  time.Duration `help:"Create the FLEET stream again once it has been missing this long (0: never; then an administrator recreates it and fleetd resumes by itself)." default:"10s" env:"FLEET_RECREATE_STREAM"`
	MaxMemory       int64         `help:"Cap on JetStream memory storage in bytes (0 = no cap)." env:"FLEET_MAX_MEMORY"`
	Cluster         string        `help:"Cluster name: join a cluster of fleetd hosts." env:"FLEET_CLUSTER"`
	ClusterListen   string        `help:"Cluster route listen address." default:"0.0.0.0:6222" env:"FLEET_CLUSTER_LISTEN"`
	Routes          []string      `help:"Routes to the other cluster members (nats://host:6222,…)." env:"FLEET_ROUTES"`
	Replicas        int           `help:"Replicas of the FLEET stream and KV buckets (default: 1, or 3 in a cluster)." env:"FLEET_REPLICAS"`
	ServerConfig    string        `help:"nats-server config file to apply (accounts, users, TLS), e.g. from 'fleetd auth'." env:"FLEET_SERVER_CONFIG" type:"path"`
	AdminCreds      string        `help:"Provision the fabric (FLEET, the buckets, the router's consumers) with this key, e.g. 'fleetd auth''s admin.nk; without it a gateway key waits for 'fleetd provision'." env:"FLEET_ADMIN_CREDS" type:"path"`
	Herdr           string        `help:"herdr socket path (default: as herdr resolves it: HERDR_SOCKET_PATH, HERDR_SESSION, ~/.config/herdr/herdr.sock)." env:"FLEET_HERDR_SOCKET" type:"path"`
	NoHerdr         bool          `help:"Run without a herdr gateway on this host (log, projections and shim only)." env:"FLEET_NO_HERDR"`
	Runtime         string        `help:"Where this host's agents run: herdr (panes of herdr), agentapi (each agent under its own coder/agentapi server, through fleetd's agentapi host, which outlives fleetd up as herdr does; stop it with 'fleetd agentapi-host --stop --socket DATA_DIR/agentapi-host.sock'), or auto: herdr when --herdr, HERDR_SOCKET_PATH or HERDR_SESSION is set or herdr's socket exists, else agentapi when it is on PATH, else herdr (waiting for its socket)." enum:"auto,herdr,agentapi" default:"auto" env:"FLEET_RUNTIME"`
	Roles           string        `help:"Roles file (JSON): launch command, model, env class, cap and tier per role." env:"FLEET_ROLES" type:"path"`
	Heartbeat       time.Duration `help:"How often the host announces it is alive." default:"5s" env:"FLEET_HEARTBEAT"`
	HostTTL         time.Duration `name:"host-ttl" help:"A host silent this long (no heartbeat) has its agents marked stale in the roster; keep it a few heartbeats long." default:"15s" env:"FLEET_HOST_TTL"`
	IdleTTL         time.Duration `name:"idle-ttl" help:"Close a named session's pane once it has been idle this long (0: never); the session stays resumable by name." default:"30m" env:"FLEET_IDLE_TTL"`
	SubmitTimeout   time.Duration `help:"How long a typed prompt may go without proof of submission before Enter is pressed once more, and as long again before its turn fails as indeterminate; raise it on a slow or loaded host." default:"5s" env:"FLEET_SUBMIT_TIMEOUT"`
	StartupGrace    time.Duration `help:"How long a spawned or restarted agent may take to start (its session reported, or its empty prompt box drawn for a CLI whose session starts with the first prompt) before its spawn or restart fails; raise it on a slow or loaded host." default:"60s" env:"FLEET_STARTUP_GRACE"`
	ExitGrace       time.Duration `help:"Turns queued for an agent whose Claude Code session ended fail as agent_exited when no session starts again within this long." default:"30s" env:"FLEET_EXIT_GRACE"`
	MaxEventReaders int           `help:"Most GET /events streams the lead shim serves at once (more: 429)." default:"64" env:"FLEET_MAX_EVENT_READERS"`
	MaxConns        int           `help:"Most HTTP connections the lead shim keeps open at once (more are answered 503 and closed)." default:"1024" env:"FLEET_MAX_CONNS"`
	MaxText         int           `help:"Largest text a turn may carry, in bytes once control sequences are removed (longer: 413). Texts Claude Code's prompt box would not keep exactly reach the agent as a file." default:"1048576" env:"FLEET_MAX_TEXT"`
}

// Run starts the gateway and blocks until SIGINT or SIGTERM.
func (c *UpCmd) Run(ctx context.Context, g *Globals) error {
	cfg := c.gatewayConfig(g)
	if !c.NoHerdr {
		rt, err := chooseRuntime(c.Runtime, c.Herdr, os.Getenv, lookAgentapi(ctx))
		if err != nil {
			return err
		}
		if rt.Name == runtimeAgentapi {
			socket, reused, err := ensureAgentapiHost(ctx, c.DataDir)
			if err != nil {
				return fmt.Errorf("--runtime agentapi: %w", err)
			}
			rt.Socket = socket
			if reused {
				rt.Reason += "; re-attached to the agentapi host already serving " + socket
			} else {
				rt.Reason += "; started the agentapi host on " + socket
			}
		}
		cfg.HerdrPath, cfg.Runtime, cfg.RuntimeReason = rt.Socket, rt.Name, rt.Reason
	}
	err := gateway.New(cfg).Run(ctx, func(gw *gateway.Gateway) { fmt.Fprint(os.Stdout, gw.Banner()) })
	if errors.Is(err, embeddednats.ErrUnauthenticated) {
		return fmt.Errorf("%w\nNATS must be no more open than the shim. Either add --token TOKEN (every NATS client then needs it too: "+
			"FLEET_TOKEN or --token for fleetd's commands, --token for the nats CLI; cluster routes authenticate with it), "+
			"or run with the server config and keys of 'fleetd auth' (--server-config <dir>/server.conf --creds <dir>/gateway-<host>.nk; "+
			"its server.conf also authenticates cluster routes), "+
			"or listen on loopback (--listen 127.0.0.1:4222, --cluster-listen 127.0.0.1:6222)", err)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "fleetd: shut down")
	}
	return err
}

// gatewayConfig maps the flags onto the gateway's config.
func (c *UpCmd) gatewayConfig(g *Globals) gateway.Config {
	// The server's name and token default to the host's and --nats-token.
	ncfg := embeddednats.Config{
		DataDir:    c.DataDir,
		Listen:     c.Listen,
		SyncAlways: c.SyncAlways,
		MaxStore:   c.MaxStore,
		MaxMemory:  c.MaxMemory,
		ConfigFile: c.ServerConfig,
		Logger:     g.Logger(),
	}
	if c.Cluster != "" {
		ncfg.ClusterName, ncfg.ClusterListen, ncfg.Routes = c.Cluster, c.ClusterListen, c.Routes
	}
	return gateway.Config{
		Version:         version,
		Host:            g.Host,
		NATS:            ncfg,
		ExternalURL:     g.NATS,
		Creds:           g.Creds,
		NATSToken:       g.natsToken(),
		AdminCreds:      c.AdminCreds,
		Replicas:        c.Replicas,
		HTTP:            c.HTTP,
		Token:           g.Token,
		TLSCert:         c.TLSCert,
		TLSKey:          c.TLSKey,
		HerdrPath:       c.Herdr,
		NoHerdr:         c.NoHerdr,
		RolesFile:       c.Roles,
		Heartbeat:       c.Heartbeat,
		HostTTL:         c.HostTTL,
		IdleTTL:         c.IdleTTL,
		SubmitTimeout:   c.SubmitTimeout,
		StartupGrace:    c.StartupGrace,
		ExitGrace:       c.ExitGrace,
		MaxText:         c.MaxText,
		MaxEventReaders: c.MaxEventReaders,
		MaxConns:        c.MaxConns,
		Retain:          c.Retain,
		RetainTurns:     c.RetainTurns,
		RecreateStream:  c.RecreateStream,
		Logger:          g.Logger(),
	}
}
