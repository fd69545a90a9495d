package herdrbridge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fleetd/fleetd/roles"
)

// MCPDir is where, in fleetd's state directory, the bridge writes the MCP
// config of each spawned agent that reads by pull.
const MCPDir = "mcp"

// NoMCPFile is the empty file, in fleetd's state directory, a sandbox
// binds as {mcp} for an agent without an MCP config: a template binds it
// whether there is one or not.
const NoMCPFile = "no-mcp-config"

// MCPServer is `fleetd mcp` for one agent of an inbox role (a main: an
// MCP client nothing can call into), at this host's shim: the command
// and its arguments, which each kind writes into its own configuration
// for that agent — Claude Code's --mcp-config file (mcpConfig), Codex's
// config.toml, Gemini's settings.json, OpenCode's opencode.json. The
// agent id and the URL are arguments, not inherited environment: no CLI
// promises to hand its whole environment to a stdio server (Codex hands
// on only a few variables). No secret is written: the shim's token, when
// the pane has one as MCPTokenVar, is passed through by reference, in
// each CLI's own way.
type MCPServer struct {
	Command string
	Args    []string
}

// MCPServerName is the name of fleetd's MCP server in every kind's
// config: the model sees its tools as the CLI prefixes them with it
// (Claude Code's mcp__fleetd__send, OpenCode's fleetd_send, …).
const MCPServerName = "fleetd"

// MCPTokenVar is the pane variable the server's shim token comes from.
const MCPTokenVar = "FLEET_TOKEN"

// MCPToolTimeout is how long a kind whose CLI limits an MCP tool call
// lets one of fleetd's run: a blocking send waits for the turn (10
// minutes unless it names its own timeout), and the CLIs' own limits are
// shorter (Codex's and OpenCode's a minute, Gemini's ten). A longer task
// is a send with a timeout, then wait.
const MCPToolTimeout = 15 * time.Minute

// mcpServer is the agent's `fleetd mcp`, or nil for an agent of a role
// that does not read by pull.
func (b *Bridge) mcpServer(agent string, role roles.Role) *MCPServer {
	if !role.Inbox {
		return nil
	}
	fleetd := b.cfg.Launch.Fleetd
	if fleetd == "" {
		fleetd, _ = os.Executable()
	}
	args := []string{"mcp", "--agent", agent}
	if u := b.cfg.Launch.FleetURL; u != "" {
		args = append(args, "--url", u)
	}
	return &MCPServer{Command: fleetd, Args: args}
}

// mcpConfig writes the MCP config file a spawned claude of an inbox role
// takes with --mcp-config, and returns its path, or "" for an agent that
// needs none (not an inbox role, or a command that is not claude, which
// would not take --mcp-config: the other kinds get the server in the
// configuration their Install writes). The token goes by reference,
// which Claude Code expands (empty without).
func (b *Bridge) mcpConfig(agent string, role roles.Role, argv []string) (string, error) {
	if !role.Inbox || len(argv) == 0 || filepath.Base(argv[0]) != "claude" || slices.Contains(argv, "--mcp-config") {
		return "", nil
	}
	if b.cfg.Launch.StateDir == "" {
		return "", fmt.Errorf("%w for role %q's MCP config", ErrNoStateDir, role.Name)
	}
	srv := b.mcpServer(agent, role)
	type server struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	body, err := json.MarshalIndent(map[string]map[string]server{"mcpServers": {MCPServerName: {Type: "stdio", Command: srv.Command, Args: srv.Args,
		Env: map[string]string{MCPTokenVar: "${" + MCPTokenVar + ":-}"}}}}, "", "  ")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(b.cfg.Launch.StateDir, MCPDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("MCP config: %w", err)
	}
	path := filepath.Join(dir, agent+".json")
	if err := os.WriteFile(path, append(body, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("MCP config: %w", err)
	}
	return path, nil
}

// noMCPFile is the empty file a sandbox binds as {mcp} for an agent
// without an MCP config.
func (b *Bridge) noMCPFile() (string, error) {
	if b.cfg.Launch.StateDir == "" {
		return "", fmt.Errorf("%w for the sandbox's {mcp}", ErrNoStateDir)
	}
	path := filepath.Join(b.cfg.Launch.StateDir, NoMCPFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return path, nil
}
