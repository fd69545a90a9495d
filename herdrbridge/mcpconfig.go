package herdrbridge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/fleetd/fleetd/roles"
)

// MCPDir is where, in fleetd's state directory, the bridge writes the MCP
// config of each spawned agent that reads by pull.
const MCPDir = "mcp"

// NoMCPFile is the empty file, in fleetd's state directory, a sandbox
// binds as {mcp} for an agent without an MCP config: a template binds it
// whether there is one or not.
const NoMCPFile = "no-mcp-config"

// mcpConfig writes the MCP config a spawned agent of an inbox role (a
// main: an MCP client nothing can call into) needs to reach the fleet —
// `fleetd mcp` for this agent, at this host's shim — and returns its path,
// or "" for an agent that needs none (not an inbox role, or a command
// that is not claude, which would not take --mcp-config). The agent id and
// the URL are arguments, not inherited environment: Claude Code does not
// promise to hand its environment to a stdio server. No secret goes in
// the file: a shim's token, when the pane has one as FLEET_TOKEN, is
// passed through by reference, which Claude Code expands (empty without).
func (b *Bridge) mcpConfig(agent string, role roles.Role, argv []string) (string, error) {
	if !role.Inbox || len(argv) == 0 || filepath.Base(argv[0]) != "claude" || slices.Contains(argv, "--mcp-config") {
		return "", nil
	}
	if b.cfg.Launch.StateDir == "" {
		return "", fmt.Errorf("%w for role %q's MCP config", ErrNoStateDir, role.Name)
	}
	fleetd := b.cfg.Launch.Fleetd
	if fleetd == "" {
		fleetd, _ = os.Executable()
	}
	args := []string{"mcp", "--agent", agent}
	if u := b.cfg.Launch.FleetURL; u != "" {
		args = append(args, "--url", u)
	}
	type server struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	body, err := json.MarshalIndent(map[string]map[string]server{"mcpServers": {"fleetd": {Type: "stdio", Command: fleetd, Args: args,
		Env: map[string]string{"FLEET_TOKEN": "${FLEET_TOKEN:-}"}}}}, "", "  ")
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
