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

// piHooks are the hooks fleetd's Pi extension runs, by Claude Code's
// name, with their command-line spelling: Pi sends Claude Code's fields
// through the extension, so `fleetd hook` serves it as it serves Claude.
var piHooks = []struct{ name, arg string }{
	{"SessionStart", "session-start"},
	{"UserPromptSubmit", "user-prompt-submit"},
	{"Stop", "stop"},
	{"StopFailure", "stop-failure"},
	{"SessionEnd", "session-end"},
}

// piGatewayProvider names the model provider fleetd writes for a gateway
// role; its key is the pane's ANTHROPIC_API_KEY when it has one.
const piGatewayProvider = "fleet"

// writePiHome makes the agent's own Pi directory (dir, its
// PI_CODING_AGENT_DIR): settings.json (quiet startup, no install ping, Esc
// twice does nothing), fleetd's extension in extensions/ (Pi loads it from
// there), and — for a gateway role — models.json with a provider at its
// base_url speaking Anthropic Messages, the role's model its default. A
// clean role keeps Pi's own logins: the user's auth.json is linked in,
// never copied or changed. Nothing of the user's own ~/.pi is written.
func writePiHome(dir string, role roles.Role, hookCommand func(arg string) string, mcp *MCPServer) error {
	if hookCommand == nil {
		return errors.New("pi: no hook command (Launch.HookCommand)")
	}
	if role.EnvClass == roles.EnvGateway && role.Model == "" {
		return fmt.Errorf("pi: role %q: a gateway pi role needs a model (the gateway's model id)", role.Name)
	}
	if err := os.MkdirAll(filepath.Join(dir, "extensions"), 0o700); err != nil {
		return fmt.Errorf("pi home: %w", err)
	}
	settings := map[string]any{"quietStartup": true, "enableInstallTelemetry": false, "doubleEscapeAction": "none", "collapseChangelog": true}
	models := filepath.Join(dir, "models.json")
	if role.EnvClass == roles.EnvGateway {
		settings["defaultProvider"], settings["defaultModel"] = piGatewayProvider, role.Model
		b, err := json.MarshalIndent(map[string]any{"providers": map[string]any{piGatewayProvider: map[string]any{
			// The Anthropic SDK appends /v1/messages itself.
			"baseUrl": strings.TrimSuffix(strings.TrimSuffix(role.BaseURL, "/"), "/v1"),
			"api":     "anthropic-messages",
			// A value that names a variable is that variable's value
			// (when the pane has it), else the name itself.
			"apiKey": "ANTHROPIC_API_KEY",
			"models": []map[string]any{{"id": role.Model, "name": role.Model}},
		}}}, "", "  ")
		if err != nil {
			return err
		}
		if err := writeReplacing(models, b); err != nil {
			return err
		}
	} else if err := os.Remove(models); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pi home: %w", err)
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := writeReplacing(filepath.Join(dir, "settings.json"), b); err != nil {
		return err
	}
	ext, err := piExtension(hookCommand, mcp)
	if err != nil {
		return err
	}
	if err := writeReplacing(filepath.Join(dir, "extensions", "fleetd.ts"), []byte(ext)); err != nil {
		return err
	}
	if role.EnvClass != roles.EnvGateway {
		if auth := userPiAuth(); auth != "" {
			link := filepath.Join(dir, "auth.json")
			os.Remove(link)
			if err := os.Symlink(auth, link); err != nil {
				return fmt.Errorf("pi home: link the login: %w", err)
			}
		}
	}
	return nil
}

// userPiAuth is the user's own Pi login file, "" when there is none.
func userPiAuth() string {
	dir := os.Getenv("PI_CODING_AGENT_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".pi", "agent")
	}
	auth := filepath.Join(dir, "auth.json")
	if _, err := os.Stat(auth); err != nil {
		return ""
	}
	return auth
}

// piExtension is fleetd's Pi extension with the agent's hook commands in
// it. Each handler runs its hook with Claude Code's payload on stdin and
// waits for it (10 s at most), as Claude Code waits for its hooks: the
// input handler returns only once UserPromptSubmit has recorded the
// prompt, so the submission is in the log before the model is asked.
// A prompt_id of the extension's own joins a turn's UserPromptSubmit and
// Stop; only prompts typed into the editor (source "interactive") count.
// For a main (mcp not nil) it also gives Pi, which has no MCP client by
// design, the tools of the agent's `fleetd mcp` (piMCPSource).
func piExtension(hookCommand func(arg string) string, mcp *MCPServer) (string, error) {
	cmds := map[string]string{}
	for _, h := range piHooks {
		cmds[h.name] = hookCommand(h.arg)
	}
	b, err := json.Marshal(cmds)
	if err != nil {
		return "", err
	}
	src := strings.Replace(piExtensionSource, "__HOOKS__", string(b), 1)
	if mcp == nil {
		return strings.Replace(src, "__MCP__", "// Not a main: no fleet tools.\nasync function mcpTools(_pi: any) {}\n", 1), nil
	}
	b, err = json.Marshal(map[string]any{"command": mcp.Command, "args": mcp.Args, "server": MCPServerName})
	if err != nil {
		return "", err
	}
	return strings.Replace(src, "__MCP__", strings.Replace(piMCPSource, "__SERVER__", string(b), 1), 1), nil
}

// piExtensionSource is the extension, measured with Pi 0.73.1: session
// reasons map to Claude Code's sources (a /new is a "clear", a session
// opened with --session that holds messages a "resume", a compaction
// starts a "compact"); agent_end's reply is its last assistant message's
// text blocks, and a turn that ended in an error or was interrupted is a
// StopFailure. It adds /clear, which starts a new session as /new does,
// and keeps a session resumable before its first reply (holdSession).
// __MCP__ is piMCPSource for a main, a mcpTools that does nothing
// otherwise.
const piExtensionSource = `// Written by fleetd for one agent; rewritten at each (re)start.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const hooks: Record<string, string> = __HOOKS__;

function run(name: string, payload: Record<string, unknown>): Promise<void> {
	return new Promise((resolve) => {
		let child: any;
		try {
			child = spawn("/bin/sh", ["-c", hooks[name]], { stdio: ["pipe", "ignore", "ignore"] });
		} catch {
			resolve();
			return;
		}
		const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
		child.on("error", () => { clearTimeout(timer); resolve(); });
		child.on("close", () => { clearTimeout(timer); resolve(); });
		child.stdin.on("error", () => {});
		child.stdin.end(JSON.stringify({ hook_event_name: name, ...payload }));
	});
}

// Pi writes a session's file only with its first reply, so "pi --session
// <id>" would not find a session killed before it (and exit). Until then a
// file of its own holding the session's header lets Pi find it; it goes
// once Pi's own file is there (Pi resumes the newer of the two).
function held(ctx: any): string {
	const file = ctx.sessionManager.getSessionFile();
	return file ? join(dirname(file), "fleetd-" + ctx.sessionManager.getSessionId() + ".jsonl") : "";
}
function holdSession(ctx: any) {
	const file = ctx.sessionManager.getSessionFile();
	const header = ctx.sessionManager.getHeader();
	if (!file || !header || existsSync(file)) return;
	try { writeFileSync(held(ctx), JSON.stringify(header) + "\n", { flag: "wx" }); } catch {}
}
function releaseSession(ctx: any) {
	const file = ctx.sessionManager.getSessionFile();
	const p = held(ctx);
	if (!file || p === file || !existsSync(file)) return;
	try { unlinkSync(p); } catch {}
}

__MCP__
export default async function (pi: any) {
	await mcpTools(pi);
	let promptID = "";
	const base = (ctx: any) => ({
		session_id: ctx.sessionManager.getSessionId(),
		transcript_path: ctx.sessionManager.getSessionFile() ?? "",
		cwd: ctx.cwd,
	});
	pi.on("session_start", async (event: any, ctx: any) => {
		let source = event.reason;
		if (source === "reload") return;
		if (source === "new") source = "clear";
		if (source === "fork") source = "resume";
		if (source === "startup" && ctx.sessionManager.getEntries().some((e: any) => e.type === "message")) source = "resume";
		holdSession(ctx);
		await run("SessionStart", { ...base(ctx), source, model: ctx.model?.id ?? "" });
	});
	pi.on("session_compact", async (_event: any, ctx: any) => {
		await run("SessionStart", { ...base(ctx), source: "compact", model: ctx.model?.id ?? "" });
	});
	pi.on("input", async (event: any, ctx: any) => {
		if (event.source !== "interactive") return { action: "continue" };
		promptID = randomUUID();
		await run("UserPromptSubmit", { ...base(ctx), prompt_id: promptID, prompt: event.text });
		return { action: "continue" };
	});
	pi.on("agent_end", async (event: any, ctx: any) => {
		releaseSession(ctx);
		if (promptID === "") return;
		const id = promptID;
		promptID = "";
		const msgs = event.messages ?? [];
		const last = [...msgs].reverse().find((m: any) => m.role === "assistant");
		const text = !last ? "" : typeof last.content === "string" ? last.content
			: last.content.filter((b: any) => b.type === "text").map((b: any) => b.text).join("");
		if (last && (last.stopReason === "error" || last.stopReason === "aborted")) {
			await run("StopFailure", { ...base(ctx), prompt_id: id, last_assistant_message: text,
				error: last.stopReason === "aborted" ? "interrupted" : (last.errorMessage ?? "error") });
			return;
		}
		await run("Stop", { ...base(ctx), prompt_id: id, last_assistant_message: text, stop_hook_active: false });
	});
	// fleetd types /clear before each prompt of a fresh_context role, as
	// for Claude Code: Pi's own is /new.
	pi.registerCommand("clear", {
		description: "Start a new session (fleetd: as /new)",
		handler: async (_args: string, ctx: any) => { await ctx.newSession(); },
	});
	pi.on("session_shutdown", async (event: any, ctx: any) => {
		const reasons: Record<string, string> = { quit: "prompt_input_exit", new: "clear", resume: "other", fork: "other" };
		if (!(event.reason in reasons)) return;
		await run("SessionEnd", { ...base(ctx), reason: reasons[event.reason] });
	});
}
`

// piMCPSource is the part of fleetd's Pi extension a main gets: a small
// MCP client (JSON-RPC lines over the stdio of the agent's own `fleetd
// mcp`) that gives Pi each tool the server lists, named "fleetd_<tool>"
// (OpenCode's spelling), and the server's instructions at the end of the
// system prompt. One server, so a Pi main has the tools, arguments and
// answers every other main has. Pi waits for an extension's async factory
// before its session starts, so the tools are there for the first prompt;
// a server that could not start is retried at the next session start and
// at each call, and a call to a server gone mid-call fails as a tool error
// that says so (the model sees it; fleetd's log has the send or not).
const piMCPSource = `
const mcpServer: { command: string; args: string[]; server: string } = __SERVER__;

class MCPClient {
	child: any = null;
	ready: Promise<any> | null = null;
	next = 1;
	pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
	stderr = "";
	instructions = "";

	start(): Promise<any> {
		if (this.ready) return this.ready;
		const child = spawn(mcpServer.command, mcpServer.args, { stdio: ["pipe", "pipe", "pipe"] });
		this.child = child;
		let buf = "";
		child.stdout.setEncoding("utf8");
		child.stdout.on("data", (d: string) => {
			buf += d;
			for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
				const line = buf.slice(0, i);
				buf = buf.slice(i + 1);
				this.answer(line);
			}
		});
		child.stderr.setEncoding("utf8");
		child.stderr.on("data", (d: string) => { this.stderr = (this.stderr + d).slice(-2000); });
		child.stdin.on("error", () => {});
		const gone = (why: string) => {
			if (this.child !== child) return;
			this.child = null;
			this.ready = null;
			const err = new Error("fleetd mcp " + why + (this.stderr.trim() ? ": " + this.stderr.trim() : ""));
			for (const p of this.pending.values()) p.reject(err);
			this.pending.clear();
		};
		child.on("error", (e: Error) => gone("could not start (" + e.message + ")"));
		child.on("exit", (code: number | null, signal: string | null) => gone("exited (" + (signal ?? code) + ")"));
		this.ready = this.call("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "fleetd-pi", version: "1" } })
			.then((init: any) => {
				this.instructions = init?.instructions ?? "";
				this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
				return init;
			});
		this.ready.catch(() => { child.kill(); });
		return this.ready;
	}

	close() {
		const child = this.child;
		this.child = null;
		this.ready = null;
		for (const p of this.pending.values()) p.reject(new Error("fleetd mcp closed: the session ended"));
		this.pending.clear();
		child?.stdin.end();
		child?.kill();
	}

	send(msg: any) {
		this.child?.stdin.write(JSON.stringify(msg) + "\n");
	}

	answer(line: string) {
		let msg: any;
		try { msg = JSON.parse(line); } catch { return; }
		const p = typeof msg?.id === "number" ? this.pending.get(msg.id) : undefined;
		if (!p || msg.method) return;
		this.pending.delete(msg.id);
		if (msg.error) p.reject(new Error("fleetd mcp: " + (msg.error.message ?? JSON.stringify(msg.error))));
		else p.resolve(msg.result);
	}

	call(method: string, params: any, signal?: AbortSignal): Promise<any> {
		if (!this.child) return Promise.reject(new Error("fleetd mcp is not running" + (this.stderr.trim() ? ": " + this.stderr.trim() : "")));
		const id = this.next++;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject });
			signal?.addEventListener("abort", () => {
				if (!this.pending.delete(id)) return;
				this.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "interrupted" } });
				reject(new Error("interrupted"));
			}, { once: true });
			this.send({ jsonrpc: "2.0", id, method, params });
		});
	}
}

// mcpTools gives this extension runtime its own client: Pi makes a new
// runtime, calling the factory again, for each session (/new, /clear,
// a resume), and tears the old one down with session_shutdown, which
// ends its ` + "`fleetd mcp`" + `.
async function mcpTools(pi: any) {
	const fleetd = new MCPClient();
	let registered = false;
	const register = async () => {
		await fleetd.start();
		const listed = await fleetd.call("tools/list", {});
		for (const tool of listed?.tools ?? []) {
			const about = String(tool.description ?? tool.name);
			pi.registerTool({
				name: mcpServer.server + "_" + tool.name,
				label: mcpServer.server + " " + tool.name,
				description: about,
				promptSnippet: about.split(". ")[0].slice(0, 160),
				parameters: tool.inputSchema ?? { type: "object", properties: {} },
				async execute(_id: string, params: any, signal?: AbortSignal) {
					await fleetd.start();
					const res = await fleetd.call("tools/call", { name: tool.name, arguments: params ?? {} }, signal);
					const text = (res?.content ?? []).map((c: any) => c.type === "text" ? c.text : JSON.stringify(c)).join("\n");
					if (res?.isError) throw new Error(text || "fleetd " + tool.name + " failed");
					return { content: [{ type: "text", text }], details: {} };
				},
			});
		}
		registered = true;
	};
	pi.on("before_agent_start", async (event: any) => {
		if (!fleetd.instructions) return;
		return { systemPrompt: event.systemPrompt + "\n\n" + fleetd.instructions };
	});
	pi.on("session_start", async (_event: any, ctx: any) => {
		if (registered) return;
		try {
			await register();
		} catch (e: any) {
			ctx.ui?.notify?.("fleetd: this main has no fleet tools: " + e.message, "error");
		}
	});
	pi.on("session_shutdown", async () => { fleetd.close(); });
	try {
		await register();
	} catch {
		// Said at session start, when Pi can show it.
	}
}
`
