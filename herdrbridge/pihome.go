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
func writePiHome(dir string, role roles.Role, hookCommand func(arg string) string) error {
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
	ext, err := piExtension(hookCommand)
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
func piExtension(hookCommand func(arg string) string) (string, error) {
	cmds := map[string]string{}
	for _, h := range piHooks {
		cmds[h.name] = hookCommand(h.arg)
	}
	b, err := json.Marshal(cmds)
	if err != nil {
		return "", err
	}
	return strings.Replace(piExtensionSource, "__HOOKS__", string(b), 1), nil
}

// piExtensionSource is the extension, measured with Pi 0.73.1: session
// reasons map to Claude Code's sources (a /new is a "clear", a session
// opened with --session that holds messages a "resume", a compaction
// starts a "compact"); agent_end's reply is its last assistant message's
// text blocks, and a turn that ended in an error or was interrupted is a
// StopFailure. It adds /clear, which starts a new session as /new does,
// and keeps a session resumable before its first reply (holdSession).
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

export default function (pi: any) {
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
