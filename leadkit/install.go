package leadkit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/leadshim"
)

// Installed says what Install wrote.
type Installed struct {
	ClaudeMD string // the CLAUDE.md holding the charter
	Command  string // the /delegate command file
	MCP      string // the .mcp.json that starts `fleetd mcp`
	Replaced bool   // the charter was there already and is replaced
}

// Kit is how the lead reaches fleetd.
type Kit struct {
	// Exe is the fleetd executable ("fleetd" on PATH, or a path) and
	// Flags the global flags the lead needs (--url U when fleetd is not
	// at its default address).
	Exe   string
	Flags []string
	// Agent is the lead's agent id: the sender of its sends, the owner
	// of its inbox. Default "lead".
	Agent string
	// Role is the lead's role in the roles file, what its spawns are
	// allowed by (may_spawn): a lead outside fleetd is no agent of the
	// roster, so it names it. Default "lead".
	Role string
	// Token: fleetd needs a bearer token; .mcp.json then passes the
	// lead's FLEET_TOKEN through (never the token itself).
	Token bool
}

// Bin is how the lead's shell calls fleetd.
func (k Kit) Bin() string { return strings.Join(append([]string{k.Exe}, k.Flags...), " ") }

// Install writes the team charter into dir's CLAUDE.md, keeping
// everything outside its markers, the /delegate command into
// dir/.claude/commands, and the fleetd entry of dir/.mcp.json (keeping the
// other servers there).
func Install(dir string, k Kit, roles []leadshim.RoleState) (Installed, error) {
	if k.Agent == "" {
		k.Agent = "lead"
	}
	bin := k.Bin()
	in := Installed{
		ClaudeMD: filepath.Join(dir, "CLAUDE.md"),
		Command:  filepath.Join(dir, ".claude", "commands", "delegate.md"),
		MCP:      filepath.Join(dir, ".mcp.json"),
	}
	if err := os.MkdirAll(filepath.Dir(in.Command), 0o755); err != nil {
		return in, fmt.Errorf("lead directory: %w", err)
	}
	old, err := os.ReadFile(in.ClaudeMD)
	if err != nil && !os.IsNotExist(err) {
		return in, fmt.Errorf("read %s: %w", in.ClaudeMD, err)
	}
	var updated string
	updated, in.Replaced = SpliceCharter(string(old), Charter(bin, roles))
	if err := os.WriteFile(in.ClaudeMD, []byte(updated), 0o644); err != nil {
		return in, fmt.Errorf("write %s: %w", in.ClaudeMD, err)
	}
	if err := os.WriteFile(in.Command, []byte(DelegateCommand(bin)), 0o644); err != nil {
		return in, fmt.Errorf("write %s: %w", in.Command, err)
	}
	if err := writeMCP(in.MCP, k); err != nil {
		return in, err
	}
	return in, nil
}

// MCPServer is one server entry of a .mcp.json.
type MCPServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// MCPEntry is the .mcp.json entry that starts `fleetd mcp` for the lead.
func MCPEntry(k Kit) MCPServer {
	if k.Agent == "" {
		k.Agent = "lead"
	}
	if k.Role == "" {
		k.Role = "lead"
	}
	e := MCPServer{Type: "stdio", Command: k.Exe, Args: append(append([]string{}, k.Flags...), "mcp"),
		Env: map[string]string{"FLEET_AGENT_ID": k.Agent, "FLEET_ROLE": k.Role}}
	if k.Token {
		// Claude Code expands ${VAR} from its own environment.
		e.Env["FLEET_TOKEN"] = "${FLEET_TOKEN}"
	}
	return e
}

// writeMCP sets the "fleetd" server of the .mcp.json at path, keeping
// every other key and server as it was.
func writeMCP(path string, k Kit) error {
	doc := map[string]json.RawMessage{}
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(old, &doc); err != nil {
			return fmt.Errorf("%s is not a JSON object (fix or remove it): %w", path, err)
		}
	case !os.IsNotExist(err):
		return fmt.Errorf("read %s: %w", path, err)
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := doc["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return fmt.Errorf("%s: mcpServers is not an object: %w", path, err)
		}
	}
	entry, _ := json.Marshal(MCPEntry(k))
	servers["fleetd"] = entry
	doc["mcpServers"], _ = json.Marshal(servers)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Workers are the roles a lead delegates to: every role but the lead's own.
func Workers(roles []leadshim.RoleState) []leadshim.RoleState {
	return lo.Reject(roles, func(r leadshim.RoleState, _ int) bool { return r.Name == "lead" })
}
