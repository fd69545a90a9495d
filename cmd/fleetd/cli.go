package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/alecthomas/kong"

	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/leadshim"
)

// version is set by the build (-ldflags "-X main.version=…").
var version = "dev"

// CLI is fleetd's command tree. Each command is a struct with Run in its
// own file; add a command here with one line.
type CLI struct {
	Globals

	Demo         DemoCmd         `cmd:"" help:"Run the whole fabric here with nothing installed: built-in herdr, simulated or real agents (claude, codex, gemini, opencode, pi, mixed), a lead fan-out."`
	Up           UpCmd           `cmd:"" help:"Run the fabric on this host: embedded NATS, the event log, the gateway, the lead shim."`
	Tail         TailCmd         `cmd:"" help:"Show the event log, live or from a point."`
	Send         SendCmd         `cmd:"" help:"Send a turn to an agent or role:<role> and print the reply (blocks; --async prints the turn id)."`
	Turn         TurnCmd         `cmd:"" help:"Show a turn's state and reply; --wait re-attaches to it."`
	Answer       AnswerCmd       `cmd:"" help:"Show the dialog an agent is blocked on (a permission prompt), or answer it with an option's number."`
	Cancel       CancelCmd       `cmd:"" help:"Cancel a turn still queued (for an agent, or in its role's queue): it fails 'cancelled', naming who. A typed turn is never taken back."`
	Stop         StopCmd         `cmd:"" help:"Stop an agent of a host for good (its pane closed, never restarted), through that host's shim."`
	Restart      RestartCmd      `cmd:"" help:"Restart an agent afresh in a new pane under the same id, resuming its session, through its host's shim."`
	Roster       RosterCmd       `cmd:"" help:"List the fleet's agents: host, role, status, turn, queue, model, tokens, branch, last seen (--at: as it was then)."`
	Sessions     SessionsCmd     `cmd:"" help:"List the named, resumable agent sessions."`
	Cost         CostCmd         `cmd:"" help:"Tokens and USD the agents' hooks recorded, by agent, role, session or job, over a window."`
	Mcp          McpCmd          `cmd:"" help:"Serve the fleet as MCP tools over stdio (send, wait, roster, sessions, roles, inbox, reply) for Claude Code; .mcp.json starts it."`
	Init         InitCmd         `cmd:"" help:"Set a directory up for the fleet: 'fleetd init lead' writes the lead's team charter and /delegate."`
	Hook         HookCmd         `cmd:"" help:"Claude Code hook entry (run by fleetd panes' settings): append the hook's events, or spool them."`
	Hooks        HooksCmd        `cmd:"" help:"Claude Code hook setup: 'fleetd hooks settings' prints the --settings JSON."`
	SimAgent     SimAgentCmd     `cmd:"" name:"sim-agent" hidden:"" help:"Run a simulated Claude Code (tests and the demo; launch it with HERDR_AGENT=claude)."`
	Version      VersionCmd      `cmd:"" help:"Print fleetd's version."`
	Doctor       DoctorCmd       `cmd:"" help:"Check this machine and this fleet (herdr, the roles and their CLIs, NATS and FLEET, the clock, the shim, the disk): one line each, ok/warn/fail with the fix; exit 1 on a failure."`
	Bench        BenchCmd        `cmd:"" help:"Measure fleetd: turns, completion, overhead, fan-out, appends, rebuild, scale and memory, as one table."`
	Spawn        SpawnCmd        `cmd:"" help:"Start an agent of a role in a new pane of this host's herdr (in its own worktree and sandbox when its role says so)."`
	Worktrees    WorktreesCmd    `cmd:"" help:"List this host's agent worktrees (branch, dirty, ahead, merged, pushed); --prune removes those that lose nothing."`
	Adopt        AdoptCmd        `cmd:"" help:"Register an existing herdr pane of this host as an agent."`
	Auth         AuthCmd         `cmd:"" help:"Generate NATS users and subject permissions for the admin, gateways and agents."`
	Provision    ProvisionCmd    `cmd:"" help:"Create the FLEET stream, the KV buckets and the router's consumers (under 'fleetd auth': with the admin's key)."`
	DevHerdr     DevHerdrCmd     `cmd:"" name:"dev-herdr" hidden:"" help:"Run the built-in herdr-protocol server (real PTY panes) on a socket."`
	AgentapiHost AgentapiHostCmd `cmd:"" name:"agentapi-host" help:"Run the agentapi runtime: a herdr-protocol socket whose panes each run under their own coder/agentapi server (fleetd up --runtime agentapi starts it; --stop ends it and its agents)."`

	Orchestrate OrchestrateCmd `cmd:"" help:"Run a plan: tasks go to mains and workers with their context slices; replies roll up."`
}

// Globals are flags every command understands.
type Globals struct {
	Config   kong.ConfigFlag `help:"JSON config file; keys are flag names (e.g. {\"data-dir\": \"/srv/fleetd\"})." env:"FLEET_CONFIG" placeholder:"FILE"`
	LogLevel string          `help:"Log level: debug, info, warn, error." default:"info" env:"FLEET_LOG_LEVEL" enum:"debug,info,warn,error"`
	Host     string          `help:"This host's name in the fleet (a subject token)." env:"FLEET_HOST" placeholder:"NAME"`
	NATS     string          `name:"nats" help:"NATS URL of a running fleetd or an external NATS. For 'up': use it instead of the embedded server." env:"FLEET_NATS_URL" placeholder:"URL"`
	Creds    string          `help:"NATS credentials file (from 'fleetd auth'); with it, NATS gets no token." env:"FLEET_NATS_CREDS" type:"path" placeholder:"FILE"`
	URL      string          `name:"url" help:"URL of the lead HTTP shim, for client commands." default:"http://127.0.0.1:8765" env:"FLEET_URL"`
	Token    string          `help:"Bearer token for the lead HTTP shim, and NATS's token unless --nats-token or --creds is set ('fleetd up' requires it of NATS clients too)." env:"FLEET_TOKEN"`
	// TLSCA and TLSInsecure are how a client command trusts an https://
	// shim (fleetd up --tls-cert/--tls-key): a CA file, or not at all.
	TLSCA       string `name:"tls-ca" help:"PEM CA file to verify an https:// --url with (a self-signed shim's own certificate will do; default: the system's CAs)." env:"FLEET_TLS_CA" type:"path" placeholder:"FILE"`
	TLSInsecure bool   `name:"tls-insecure" help:"Do not verify an https:// --url's certificate (anyone on the path may read the token)." env:"FLEET_TLS_INSECURE"`
	// NATSToken is the NATS token when it differs from Token; a spawned
	// pane's hooks get it as FLEET_NATS_TOKEN.
	NATSToken string `name:"nats-token" help:"NATS token, when it is not --token ('fleetd up' requires it of NATS clients; panes' hooks get it as FLEET_NATS_TOKEN)." env:"FLEET_NATS_TOKEN"`
}

// Validate refuses a --tls-ca that holds no certificate before any
// command runs, so a client command does not report it as the shim being
// unreachable.
func (g *Globals) Validate() error {
	_, err := leadshim.ClientTLS(g.TLSCA, g.TLSInsecure)
	return err
}

// natsToken is the token NATS clients present and an embedded server
// requires: --nats-token, else --token.
func (g *Globals) natsToken() string {
	if g.NATSToken != "" {
		return g.NATSToken
	}
	return g.Token
}

func cliOptions(ctx context.Context) []kong.Option {
	return []kong.Option{
		kong.Name("fleetd"),
		kong.Description("fleetd — the coordination fabric for fleets of AI coding agents in herdr panes.\n\n" +
			"Every send, status change and reply is an event on NATS JetStream (stream FLEET, subjects fleet.>).\n" +
			"Flags can also come from FLEET_* environment variables and from a JSON config file (--config)."),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, Summary: true}),
		kong.Configuration(kong.JSON, defaultConfigPath()),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Vars{"version": version, "default_data_dir": gateway.DefaultDataDir()},
	}
}

// hostName is this host's subject token: --host, else this machine's.
func (g *Globals) hostName() string { return gateway.HostToken(g.Host) }

// Logger builds the process logger at the chosen level, on stderr.
func (g *Globals) Logger() *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(g.LogLevel))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// quietLogger keeps a demo's or a bench's screen for its report:
// components log warnings and errors only, unless --log-level asks for
// more than the default.
func (g *Globals) quietLogger() *slog.Logger {
	if g.LogLevel == "info" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return g.Logger()
}

// defaultConfigPath is $XDG_CONFIG_HOME/fleetd/config.json (read if present).
func defaultConfigPath() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "fleetd", "config.json")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "fleetd", "config.json")
}

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
