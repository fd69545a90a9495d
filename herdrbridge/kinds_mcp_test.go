package herdrbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// A main of Codex, Gemini CLI or OpenCode gets fleetd's MCP server in
// that agent's own configuration — `fleetd mcp --agent <id> --url <shim>`,
// its tools allowed without a dialog, a tool call allowed MCPToolTimeout,
// the shim's token passed by reference and never written — and an agent
// of a role that reads by push gets none. Pi, which has no MCP client,
// gets fleetd's extension with the agent's `fleetd mcp` in it.
func TestAMainOfEachKindGetsTheFleetdMCPServerInItsOwnConfig(t *testing.T) {
	mcp := &MCPServer{Command: "/opt/fleetd", Args: []string{"mcp", "--agent", "main-1", "--url", "http://127.0.0.1:8765"}}
	hook := func(arg string) string { return "'/x/fleetd-hook' " + arg }
	install := func(k Kind, role roles.Role, m *MCPServer) string {
		t.Helper()
		state := t.TempDir()
		if err := k.Install(Install{StateDir: state, Agent: "main-1", Cwd: "/w", Role: role, HookCommand: hook, MCP: m}); err != nil {
			t.Fatalf("%s: %v", k.Name(), err)
		}
		return state
	}
	gateway := func(kind, model, url string) roles.Role {
		return roles.Role{Name: "m", Kind: kind, EnvClass: roles.EnvGateway, BaseURL: url, Model: model, Inbox: true}
	}

	t.Run("codex", func(t *testing.T) {
		role := gateway(roles.KindCodex, "fake-model", "http://127.0.0.1:9/v1")
		b, _ := os.ReadFile(filepath.Join(install(Codex{}, role, mcp), "codex", "main-1", "config.toml"))
		want := `
[mcp_servers.fleetd]
command = "/opt/fleetd"
args = ["mcp", "--agent", "main-1", "--url", "http://127.0.0.1:8765"]
env_vars = ["FLEET_TOKEN"]
startup_timeout_sec = 30
tool_timeout_sec = 900
default_tools_approval_mode = "approve"
`
		if !strings.Contains(string(b), want) {
			t.Errorf("config.toml lacks\n%s\nit holds:\n%s", want, b)
		}
		role.Inbox = false
		if b, _ := os.ReadFile(filepath.Join(install(Codex{}, role, nil), "codex", "main-1", "config.toml")); strings.Contains(string(b), "mcp_servers") {
			t.Errorf("a worker's config.toml has an MCP server:\n%s", b)
		}
	})

	t.Run("gemini", func(t *testing.T) {
		role := gateway(roles.KindGemini, "gemini-2.5-flash", "http://127.0.0.1:9")
		var settings struct {
			MCPServers map[string]struct {
				Command string
				Args    []string
				Trust   bool
				Timeout int64
				Env     map[string]string
			} `json:"mcpServers"`
		}
		b, _ := os.ReadFile(filepath.Join(install(Gemini{}, role, mcp), "gemini", "main-1", ".gemini", "settings.json"))
		if err := json.Unmarshal(b, &settings); err != nil {
			t.Fatal(err)
		}
		s := settings.MCPServers["fleetd"]
		if s.Command != mcp.Command || !slices.Equal(s.Args, mcp.Args) || !s.Trust || s.Timeout != 900_000 || s.Env["FLEET_TOKEN"] != "${FLEET_TOKEN:-}" {
			t.Errorf("settings.json's fleetd server: %+v\n%s", s, b)
		}
		b, _ = os.ReadFile(filepath.Join(install(Gemini{}, role, nil), "gemini", "main-1", ".gemini", "settings.json"))
		if strings.Contains(string(b), "mcpServers") {
			t.Errorf("a worker's settings.json has an MCP server:\n%s", b)
		}
	})

	t.Run("opencode", func(t *testing.T) {
		role := gateway(roles.KindOpenCode, "fleet/fake-model", "http://127.0.0.1:9/v1")
		var cfg struct {
			MCP map[string]struct {
				Type        string
				Command     []string
				Enabled     bool
				Timeout     int64
				Environment map[string]string
			}
		}
		b, _ := os.ReadFile(filepath.Join(install(OpenCode{}, role, mcp), "opencode", "main-1", "opencode.json"))
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		s := cfg.MCP["fleetd"]
		if s.Type != "local" || !slices.Equal(s.Command, append([]string{mcp.Command}, mcp.Args...)) || !s.Enabled || s.Timeout != 900_000 ||
			s.Environment["FLEET_TOKEN"] != "{env:FLEET_TOKEN}" {
			t.Errorf("opencode.json's fleetd server: %+v\n%s", s, b)
		}
		b, _ = os.ReadFile(filepath.Join(install(OpenCode{}, role, nil), "opencode", "main-1", "opencode.json"))
		if strings.Contains(string(b), `"mcp"`) {
			t.Errorf("a worker's opencode.json has an MCP server:\n%s", b)
		}
	})

	t.Run("pi", func(t *testing.T) {
		role := gateway(roles.KindPi, "fake-model", "http://127.0.0.1:9")
		ext := func(m *MCPServer) string {
			b, err := os.ReadFile(filepath.Join(install(Pi{}, role, m), "pi", "agents", "main-1", "extensions", "fleetd.ts"))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		want := `const mcpServer: { command: string; args: string[]; server: string } = {"args":["mcp","--agent","main-1","--url","http://127.0.0.1:8765"],"command":"/opt/fleetd","server":"fleetd"};`
		if got := ext(mcp); !strings.Contains(got, want) || !strings.Contains(got, "await mcpTools(pi);") || strings.Contains(got, "__") {
			t.Errorf("a main's fleetd.ts lacks\n%s\n(or its tools are not registered, or a placeholder is left); it holds:\n%s", want, got)
		}
		role.Inbox = false
		if got := ext(nil); strings.Contains(got, "mcpServer") || strings.Contains(got, "registerTool") || strings.Contains(got, "__") {
			t.Errorf("a worker's fleetd.ts speaks MCP:\n%s", got)
		}
	})
}

// A character TOML would need escaped in fleetd's path is refused, not
// written into Codex's config.
func TestCodexRefusesAnMCPCommandItCannotWriteIntoTOML(t *testing.T) {
	role := roles.Role{Name: "m", Kind: roles.KindCodex, EnvClass: roles.EnvClean, Inbox: true}
	err := Codex{}.Install(Install{StateDir: t.TempDir(), Agent: "main-1", Role: role, HookCommand: func(string) string { return "x" },
		MCP: &MCPServer{Command: "/opt/fle\"etd", Args: []string{"mcp"}}})
	if err == nil || !strings.Contains(err.Error(), "TOML") {
		t.Errorf("a quote in fleetd's path: %v, want refused", err)
	}
}
