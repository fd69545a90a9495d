package herdrbridge

import (
	"os"
	"path/filepath"

	"github.com/fleetd/fleetd/roles"
)

// ConfigHomer is a Kind that says where its CLI keeps an agent's config
// and state: the paths a sandbox binds as the agent's config home
// ({config}, roles.Sandbox), writable where the CLI writes (its
// sessions, rollouts, logs, its own settings) and read-only for fleetd's
// hook files inside, which the CLI only reads. Every kind is one
// (TestEveryKindHasAConfigHome): it is how one sandbox template runs an
// agent of any kind.
type ConfigHomer interface {
	// ConfigHome is the config home of agent, whose pane's environment
	// is env (its HOME, and the variables LaunchEnv set).
	ConfigHome(stateDir, agent string, env map[string]string) []roles.ConfigPath
}

// homeOf is the HOME a pane's environment gives its agent, else this
// process's.
func homeOf(env map[string]string) string {
	if h := env["HOME"]; h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

func rw(path string) roles.ConfigPath     { return roles.ConfigPath{Path: path, Write: true, Dir: true} }
func rwFile(path string) roles.ConfigPath { return roles.ConfigPath{Path: path, Write: true} }
func ro(path string) roles.ConfigPath     { return roles.ConfigPath{Path: path} }

// ConfigHome: Claude Code keeps its state, sessions and login in
// ~/.claude and ~/.claude.json, which all its agents share (fleetd's
// hooks are in the settings file the template binds as {settings}).
func (Claude) ConfigHome(_, _ string, env map[string]string) []roles.ConfigPath {
	home := homeOf(env)
	return []roles.ConfigPath{rw(filepath.Join(home, ".claude")), rwFile(filepath.Join(home, ".claude.json"))}
}

// ConfigHome: the agent's CODEX_HOME, where Codex writes its rollouts,
// logs and state database; fleetd's hooks.json there read-only.
func (Codex) ConfigHome(stateDir, agent string, _ map[string]string) []roles.ConfigPath {
	dir := codexHome(stateDir, agent)
	return []roles.ConfigPath{rw(dir), ro(filepath.Join(dir, "hooks.json"))}
}

// ConfigHome: the agent's GEMINI_CLI_HOME, where Gemini keeps its chats
// and the hooks' log; fleetd's settings there (its hooks) read-only.
func (Gemini) ConfigHome(stateDir, agent string, _ map[string]string) []roles.ConfigPath {
	dir := geminiHome(stateDir, agent)
	return []roles.ConfigPath{rw(dir), ro(filepath.Join(dir, ".gemini", "settings.json"))}
}

// ConfigHome: the agent's config directory (fleetd's plugin there
// read-only, its usage file writable), and OpenCode's own config, data,
// state and cache directories under XDG's (its sessions database, logs,
// snapshots; OpenCode 1.18.33 writes a .gitignore into its global config
// directory as it starts, and fails to start when it cannot), which all
// its agents share as Claude Code's ~/.claude is.
func (OpenCode) ConfigHome(stateDir, agent string, env map[string]string) []roles.ConfigPath {
	dir := openCodeDir(stateDir, agent)
	home := homeOf(env)
	xdg := func(name, def string) string {
		if d := env[name]; filepath.IsAbs(d) {
			return filepath.Join(d, "opencode")
		}
		return filepath.Join(home, def, "opencode")
	}
	return []roles.ConfigPath{rw(dir), ro(filepath.Join(dir, "plugins", "fleetd.js")),
		rw(xdg("XDG_CONFIG_HOME", ".config")), rw(xdg("XDG_DATA_HOME", ".local/share")), rw(xdg("XDG_STATE_HOME", ".local/state")), rw(xdg("XDG_CACHE_HOME", ".cache"))}
}

// ConfigHome: the agent's Pi directory (fleetd's extension there
// read-only) and the session directory all fleetd's Pi agents share, so
// any of them resumes a session by its id.
func (Pi) ConfigHome(stateDir, agent string, _ map[string]string) []roles.ConfigPath {
	dir := piHome(stateDir, agent)
	return []roles.ConfigPath{rw(dir), rw(piSessions(stateDir)), ro(filepath.Join(dir, "extensions", "fleetd.ts"))}
}
