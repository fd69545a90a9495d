package herdrbridge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fleetd/fleetd/roles"
)

// codexHooks are the hooks fleetd installs for a Codex agent: Codex
// 0.169.0 runs Claude Code's names with Claude Code's fields (turn_id for
// prompt_id), so `fleetd hook` serves both.
var codexHooks = []struct{ name, snake, arg string }{
	{"SessionStart", "session_start", "session-start"},
	{"UserPromptSubmit", "user_prompt_submit", "user-prompt-submit"},
	{"Stop", "stop", "stop"},
}

// codexHookTimeout is Codex's limit on each hook, in seconds.
const codexHookTimeout = 10

// writeCodexHome makes the agent's own CODEX_HOME (dir): config.toml and
// hooks.json, fleetd's hooks trusted beforehand (the hash Codex's "trust
// all" writes: no "Hooks need review" dialog, which took the first prompt
// typed into it), the working directory trusted, paste-burst detection
// and the shared app-server daemon off (the daemon outlives the TUI),
// and — for a gateway role — a model provider at its base_url whose key
// is the pane's OPENAI_API_KEY. A clean role keeps Codex's own login: the
// user's ~/.codex/auth.json is linked in, never copied or changed.
// A main (mcp not nil) gets fleetd's MCP server there (codexMCP).
// Nothing of the user's own ~/.codex is written. The sessions Codex keeps
// there stay across restarts, so `codex resume <id>` finds them.
func writeCodexHome(dir, cwd string, role roles.Role, hookCommand func(arg string) string, mcp *MCPServer) error {
	if hookCommand == nil {
		return errors.New("codex: no hook command (Launch.HookCommand)")
	}
	words := []string{dir, cwd, role.BaseURL, role.Model}
	if mcp != nil {
		words = append(append(words, mcp.Command), mcp.Args...)
	}
	for _, s := range words {
		if strings.ContainsAny(s, "\"\\\n\r") {
			return fmt.Errorf("codex config: %q holds a character fleetd does not write into TOML", s)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("codex home: %w", err)
	}
	hooksPath := filepath.Join(dir, "hooks.json")
	type command struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type group struct {
		Hooks []command `json:"hooks"`
	}
	hooks := map[string][]group{}
	var cfg strings.Builder
	cfg.WriteString("# Written by fleetd for one agent; rewritten at each (re)start.\n")
	if role.Model != "" {
		fmt.Fprintf(&cfg, "model = %q\n", role.Model)
	}
	cfg.WriteString("check_for_update_on_startup = false\ndisable_paste_burst = true\n")
	if role.EnvClass == roles.EnvGateway {
		cfg.WriteString("model_provider = \"fleet\"\n\n[model_providers.fleet]\nname = \"fleet\"\n")
		fmt.Fprintf(&cfg, "base_url = %q\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n", role.BaseURL)
	}
	if cwd != "" {
		fmt.Fprintf(&cfg, "\n[projects.%q]\ntrust_level = \"trusted\"\n", cwd)
	}
	cfg.WriteString("\n[features]\ndaemon_auto_start = false\nin_app_updates = false\n")
	if mcp != nil {
		cfg.WriteString(codexMCP(*mcp))
	}
	for _, h := range codexHooks {
		cmd := hookCommand(h.arg)
		hooks[h.name] = []group{{Hooks: []command{{Type: "command", Command: cmd, Timeout: codexHookTimeout}}}}
		hash, err := codexHookHash(h.snake, cmd, codexHookTimeout)
		if err != nil {
			return err
		}
		fmt.Fprintf(&cfg, "\n[hooks.state.%q]\ntrusted_hash = %q\n", hooksPath+":"+h.snake+":0:0", hash)
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeReplacing(hooksPath, b); err != nil {
		return err
	}
	if err := writeReplacing(filepath.Join(dir, "config.toml"), []byte(cfg.String())); err != nil {
		return err
	}
	if role.EnvClass != roles.EnvGateway {
		if home, err := os.UserHomeDir(); err == nil {
			auth := filepath.Join(home, ".codex", "auth.json")
			link := filepath.Join(dir, "auth.json")
			if _, err := os.Stat(auth); err == nil {
				os.Remove(link)
				if err := os.Symlink(auth, link); err != nil {
					return fmt.Errorf("codex home: link the login: %w", err)
				}
			}
		}
	}
	return nil
}

// codexMCP is fleetd's MCP server as a config.toml table of Codex
// 0.169.0: its tools approved beforehand (a main's sends and inbox reads
// are what it is for, and an approval dialog would wait for a person's
// key), the shim's token passed through from the pane by name (Codex
// starts a stdio server with only a few of its own variables, and never
// writes a value into a file), more time to start than Codex's 10 s on a
// loaded machine, and MCPToolTimeout for a tool call, not Codex's 60 s. Its strings were checked for what TOML would need
// escaped.
func codexMCP(mcp MCPServer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n[mcp_servers.%s]\ncommand = %q\nargs = [", MCPServerName, mcp.Command)
	for i, a := range mcp.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a)
	}
	fmt.Fprintf(&b, "]\nenv_vars = [%q]\nstartup_timeout_sec = 30\ntool_timeout_sec = %d\ndefault_tools_approval_mode = \"approve\"\n", MCPTokenVar, int(MCPToolTimeout.Seconds()))
	return b.String()
}

// codexHookHash is the trusted_hash Codex 0.169.0 records for a hook it
// was told to trust: sha256 of the hook's identity as compact JSON with
// sorted keys (the group's event name and its hooks), so a hook whose
// command changes must be trusted again.
func codexHookHash(event, command string, timeout int) (string, error) {
	type hook struct {
		Async   bool   `json:"async"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
		Type    string `json:"type"`
	}
	ident := struct {
		EventName string `json:"event_name"`
		Hooks     []hook `json:"hooks"`
	}{event, []hook{{Command: command, Timeout: timeout, Type: "command"}}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // Codex (serde_json) writes & < > as they are
	if err := enc.Encode(ident); err != nil {
		return "", err
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// writeReplacing writes b to path (0600) in one rename.
func writeReplacing(path string, b []byte) error {
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
