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

// OpenCodeVersion is the OpenCode release the opencode kind was measured
// against; the agent's config directory pins its plugin package to it.
const OpenCodeVersion = "1.18.33"

// openCodeHooks are the hooks fleetd's plugin runs, by their
// command-line spelling.
var openCodeHooks = []string{"session-start", "user-prompt-submit", "stop", "stop-failure", "notification"}

// writeOpenCodeHome makes the agent's own OpenCode config directory (dir,
// the pane's OPENCODE_CONFIG_DIR):
//   - plugins/fleetd.js, fleetd's plugin (openCodePlugin), which runs
//     fleetd's hooks with Claude Code's payloads;
//   - opencode.json: the paste summary off (a summarised paste reaches
//     the model trimmed, with a space after it), autoupdate and sharing
//     off, the role's model (provider/model), and — for a gateway role,
//     whose model is "fleet/<model>" — the "fleet" provider at its
//     base_url (OpenCode's Anthropic client) whose key is the pane's
//     ANTHROPIC_API_KEY;
//   - package.json, package-lock.json and node_modules/, so that OpenCode
//     does not npm-install @opencode-ai/plugin into the directory as it
//     starts: it does so for every config directory whose lock file does
//     not list that package, and waits for it when the directory holds
//     plugins (73 s with no registry, before the box is drawn). The plugin
//     imports nothing from npm.
//
// A main (mcp not nil) gets fleetd's MCP server in opencode.json
// (openCodeMCP). A clean role keeps OpenCode's own login, which lives in
// the user's data directory, not here; nothing of the user's own configuration is
// written. Sessions stay in OpenCode's data directory, so opencode
// --session finds them after a restart.
func writeOpenCodeHome(dir string, role roles.Role, hookCommand func(arg string) string, mcp *MCPServer) error {
	if hookCommand == nil {
		return errors.New("opencode: no hook command (Launch.HookCommand)")
	}
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o700); err != nil {
		return fmt.Errorf("opencode config: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
		return fmt.Errorf("opencode config: %w", err)
	}
	cfg := map[string]any{
		"$schema":      "https://opencode.ai/config.json",
		"autoupdate":   false,
		"share":        "disabled",
		"experimental": map[string]any{"disable_paste_summary": true},
	}
	// OpenCode names a model "provider/model", on its command line too:
	// a bare name there is refused with a toast, and the TUI then does
	// not open the --session it was given (measured), so a restart
	// would start afresh.
	model := role.Model
	provider, name, ok := strings.Cut(model, "/")
	if model != "" && (!ok || provider == "" || name == "") {
		return fmt.Errorf("opencode: role %q: model %q is not OpenCode's provider/model (a gateway role's provider is \"fleet\": \"fleet/%s\")", role.Name, model, model)
	}
	if role.EnvClass == roles.EnvGateway {
		if provider != "fleet" {
			return fmt.Errorf("opencode: gateway role %q: model %q: its provider must be \"fleet\", the endpoint fleetd writes (\"fleet/<model>\")", role.Name, model)
		}
		cfg["provider"] = map[string]any{"fleet": map[string]any{
			"npm":     "@ai-sdk/anthropic",
			"name":    "fleet",
			"options": map[string]any{"baseURL": role.BaseURL, "apiKey": "{env:ANTHROPIC_API_KEY}"},
			"models":  map[string]any{name: map[string]any{"name": name}},
		}}
	}
	if model != "" {
		cfg["model"], cfg["small_model"] = model, model
	}
	if mcp != nil {
		cfg["mcp"] = openCodeMCP(*mcp)
	}
	hooks := map[string]string{}
	for _, h := range openCodeHooks {
		hooks[h] = hookCommand(h)
	}
	plugin, err := openCodePlugin(hooks, filepath.Join(dir, "usage.jsonl"))
	if err != nil {
		return err
	}
	pkg := map[string]any{"dependencies": map[string]string{"@opencode-ai/plugin": OpenCodeVersion}}
	lock := map[string]any{"lockfileVersion": 3, "packages": map[string]any{"": pkg}}
	for name, v := range map[string]any{"opencode.json": cfg, "package.json": pkg, "package-lock.json": lock} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := writeReplacing(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	return writeReplacing(filepath.Join(dir, "plugins", "fleetd.js"), []byte(plugin))
}

// openCodeMCP is fleetd's MCP server in OpenCode 1.18.33's config: a
// local server, MCPToolTimeout for a tool call (without one the MCP
// client's own minute applies), the shim's token passed by reference,
// which OpenCode substitutes from its environment as it loads the config
// (empty without). OpenCode asks no permission for an MCP tool unless a
// config says so.
func openCodeMCP(mcp MCPServer) map[string]any {
	return map[string]any{MCPServerName: map[string]any{
		"type": "local", "command": append([]string{mcp.Command}, mcp.Args...), "enabled": true,
		"timeout":     MCPToolTimeout.Milliseconds(),
		"environment": map[string]string{MCPTokenVar: "{env:" + MCPTokenVar + "}"},
	}}
}

// openCodePlugin is fleetd's plugin for one agent: hooks are the hook
// commands by name, usage the file it records each turn's tokens in (the
// payloads' transcript_path, which the hook's opencode usage reader
// reads).
//
// The plugin sends what Claude Code's hooks would: SessionStart before a
// session's first prompt (OpenCode creates its session with that prompt;
// "startup" for one it saw created, "resume" for one opened with
// --session), UserPromptSubmit from chat.message (the prompt's text
// parts, its message id as prompt_id), awaited before OpenCode sends the
// prompt on, and Stop (or StopFailure, for an assistant message that
// ended in an error) when the session goes idle after a prompt, with the
// text of the turn's last assistant message. A shell command (the "!"
// mode) and a subagent's session send nothing; a compaction sends
// SessionStart with source "compact", as Claude Code's /compact does. The hooks run one at a
// time, in order, their output discarded (the TUI owns the screen).
func openCodePlugin(hooks map[string]string, usage string) (string, error) {
	h, err := json.Marshal(hooks)
	if err != nil {
		return "", err
	}
	u, err := json.Marshal(usage)
	if err != nil {
		return "", err
	}
	r := strings.NewReplacer("__HOOKS__", string(h), "__USAGE__", string(u))
	return r.Replace(openCodePluginJS), nil
}

const openCodePluginJS = `// Written by fleetd for one agent; rewritten at each (re)start.
// OpenCode has no command hooks: this plugin runs fleetd's hook with
// Claude Code's payloads at the moments Claude Code runs its hooks.
import { spawn } from "node:child_process"
import fs from "node:fs"

const HOOKS = __HOOKS__
const USAGE = __USAGE__

const run = (arg, payload) => new Promise((resolve) => {
  let child
  try {
    child = spawn("/bin/sh", ["-c", HOOKS[arg]], { stdio: ["pipe", "ignore", "ignore"] })
  } catch { return resolve() }
  const timer = setTimeout(() => { try { child.kill("SIGKILL") } catch {} }, 10000)
  const done = () => { clearTimeout(timer); resolve() }
  child.on("error", done)
  child.on("close", done)
  child.stdin.on("error", () => {})
  child.stdin.end(JSON.stringify(payload))
})

const texts = (parts) => (parts || []).filter((p) => p.type === "text" && !p.synthetic)

export const FleetdPlugin = async ({ client, directory }) => {
  try { if (fs.statSync(USAGE).size > (1 << 20)) fs.writeFileSync(USAGE, "") } catch {}
  let chain = Promise.resolve()
  const queue = (fn) => (chain = chain.then(fn, fn))
  const created = new Set(), children = new Set(), started = new Set()
  const pending = new Map()
  const base = (sid, event) => ({ session_id: sid, hook_event_name: event, cwd: directory, transcript_path: USAGE })
  const finish = async (sid, turn) => {
    let msgs = []
    try {
      const res = await client.session.messages({ path: { id: sid } })
      msgs = Array.isArray(res) ? res : (res && res.data) || []
    } catch {}
    const mine = msgs.filter((m) => m.info && m.info.role === "assistant" && m.info.parentID === turn.prompt_id)
    const last = mine[mine.length - 1]
    const text = last ? texts(last.parts).map((p) => p.text).join("") : ""
    const tokens = { input: 0, output: 0, reasoning: 0, cache_read: 0, cache_write: 0 }
    let cost = 0
    for (const m of mine) {
      const t = m.info.tokens || {}
      tokens.input += t.input || 0
      tokens.output += t.output || 0
      tokens.reasoning += t.reasoning || 0
      tokens.cache_read += (t.cache && t.cache.read) || 0
      tokens.cache_write += (t.cache && t.cache.write) || 0
      cost += m.info.cost || 0
    }
    try {
      fs.appendFileSync(USAGE, JSON.stringify({ prompt_id: turn.prompt_id, session_id: sid, model: last ? last.info.modelID : "", tokens, cost, messages: mine.length }) + "\n")
    } catch {}
    const err = last && last.info.error
    if (err) {
      const message = (err.data && err.data.message) || err.name || "error"
      return run("stop-failure", { ...base(sid, "StopFailure"), prompt_id: turn.prompt_id, last_assistant_message: text, error: { type: err.name || "error", message } })
    }
    return run("stop", { ...base(sid, "Stop"), prompt_id: turn.prompt_id, last_assistant_message: text, stop_hook_active: false })
  }
  return {
    "chat.message": async (input, output) => {
      const sid = input.sessionID
      if (children.has(sid)) return
      const prompt = texts(output.parts).map((p) => p.text).join("\n")
      const turn = { prompt_id: (output.message && output.message.id) || input.messageID || "" }
      pending.set(sid, turn)
      await queue(async () => {
        if (!started.has(sid)) {
          started.add(sid)
          await run("session-start", { ...base(sid, "SessionStart"), source: created.has(sid) ? "startup" : "resume", model: (input.model && input.model.modelID) || "" })
        }
        await run("user-prompt-submit", { ...base(sid, "UserPromptSubmit"), prompt_id: turn.prompt_id, prompt })
      })
    },
    event: async ({ event }) => {
      const p = event.properties || {}
      if (event.type === "session.created" && p.info) {
        (p.info.parentID ? children : created).add(p.info.id)
      } else if (event.type === "session.compacted" && p.sessionID && !children.has(p.sessionID)) {
        // A /compact goes on in the same session: say so as Claude Code
        // does, a session started by "compact".
        started.add(p.sessionID)
        await queue(() => run("session-start", { ...base(p.sessionID, "SessionStart"), source: "compact" }))
      } else if (event.type === "permission.asked" && p.sessionID) {
        // A permission request waits for a person: say so as Claude
        // Code's Notification does (blocked; fleetd reads the dialog).
        await queue(() => run("notification", { ...base(p.sessionID, "Notification"), notification_type: "permission_prompt",
          message: "OpenCode needs your permission: " + (p.permission || "") }))
      } else if (event.type === "session.idle" || (event.type === "session.status" && p.status && p.status.type === "idle")) {
        const turn = pending.get(p.sessionID)
        if (!turn) return
        pending.delete(p.sessionID)
        await queue(() => finish(p.sessionID, turn))
      }
    },
  }
}
`
