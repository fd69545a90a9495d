package herdrbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fleetd/fleetd/roles"
)

// geminiHooks are the hooks fleetd installs for a Gemini agent, each as
// the `fleetd hook` of the Claude Code hook it stands for: BeforeAgent
// carries the prompt (UserPromptSubmit), AfterAgent the reply (Stop).
// The hook maps Gemini's fields (claudehook's gemini.go).
var geminiHooks = []struct{ event, arg string }{
	{"SessionStart", "session-start"},
	{"BeforeAgent", "user-prompt-submit"},
	{"AfterAgent", "stop"},
	{"Notification", "notification"},
	{"SessionEnd", "session-end"},
}

// geminiHookTimeout is Gemini's limit on each hook, in milliseconds.
const geminiHookTimeout = 10000

// writeGeminiHome makes the agent's own GEMINI_CLI_HOME (dir), where
// Gemini reads .gemini/settings.json instead of the user's ~/.gemini:
// fleetd's hooks; no update check, tips, banner, usage statistics or
// telemetry; the role's model pinned (else Gemini's "Auto" asks a
// classifier model first on every prompt); loop detection off (its
// dialog waits for a person's key, and a fleet's turns have their own
// time limits); git-ignored files readable by its tools (fleetd's inbox
// is git-ignored, and a text handed over as a file is read from there).
// A gateway role logs in with the pane's API key (its GEMINI_API_KEY, its
// endpoint GOOGLE_GEMINI_BASE_URL); a clean role keeps the user's Google
// login: ~/.gemini's oauth_creds.json and google_accounts.json are linked
// in, never copied or changed by fleetd. Gemini keeps its sessions there
// too, so `gemini --resume <id>` finds them after a restart. A main (mcp
// not nil) gets fleetd's MCP server there (geminiMCP).
func writeGeminiHome(dir string, role roles.Role, hookCommand func(arg string) string, mcp *MCPServer) error {
	if hookCommand == nil {
		return errors.New("gemini: no hook command (Launch.HookCommand)")
	}
	conf := filepath.Join(dir, ".gemini")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		return fmt.Errorf("gemini home: %w", err)
	}
	type hook struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type group struct {
		Hooks []hook `json:"hooks"`
	}
	hooks := map[string][]group{}
	log := geminiShellQuote(filepath.Join(dir, "hooks.log"))
	for _, h := range geminiHooks {
		// Gemini reads a hook's stderr as its answer when its stdout is
		// empty (shown as a message, or a refusal on a failure): the
		// hook's notes go to a log instead.
		cmd := "{ " + hookCommand(h.arg) + "; } 2>>" + log
		hooks[h.event] = []group{{Hooks: []hook{{Type: "command", Name: "fleetd-" + h.arg, Command: cmd, Timeout: geminiHookTimeout}}}}
	}
	auth := "oauth-personal"
	if role.EnvClass == roles.EnvGateway {
		auth = "gemini-api-key"
	}
	model := map[string]any{"disableLoopDetection": true}
	if role.Model != "" {
		model["name"] = role.Model
	}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": auth}},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"ui":        map[string]any{"hideTips": true, "hideBanner": true},
		"model":     model,
		"context":   map[string]any{"fileFiltering": map[string]any{"respectGitIgnore": false}},
		"hooks":     hooks,
	}
	if mcp != nil {
		settings["mcpServers"] = geminiMCP(*mcp)
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := writeReplacing(filepath.Join(conf, "settings.json"), b); err != nil {
		return err
	}
	if role.EnvClass == roles.EnvGateway {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	for _, name := range []string{"oauth_creds.json", "google_accounts.json"} {
		login := filepath.Join(home, ".gemini", name)
		link := filepath.Join(conf, name)
		if _, err := os.Stat(login); err != nil || login == link {
			continue
		}
		os.Remove(link)
		if err := os.Symlink(login, link); err != nil {
			return fmt.Errorf("gemini home: link the login: %w", err)
		}
	}
	return nil
}

// geminiMCP is fleetd's MCP server in Gemini CLI 0.61.0's settings:
// trusted, so its tools run without a confirmation dialog (a main's sends
// and inbox reads are what it is for); MCPToolTimeout for a tool call;
// the shim's token passed by
// reference, which Gemini expands from its own environment as it loads
// the settings (empty without): it starts a stdio server with its
// environment redacted of every variable named like a token, and the
// server's own env is how one gets through.
func geminiMCP(mcp MCPServer) map[string]any {
	return map[string]any{MCPServerName: map[string]any{
		"command": mcp.Command, "args": mcp.Args, "trust": true, "timeout": MCPToolTimeout.Milliseconds(),
		"env": map[string]string{MCPTokenVar: "${" + MCPTokenVar + ":-}"},
	}}
}

// geminiShellQuote single-quotes s for sh.
func geminiShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
