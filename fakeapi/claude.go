package fakeapi

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ClaudeVersion is the Claude Code release the fake was verified against and
// that .ci/install-claude.sh installs.
const ClaudeVersion = "2.1.328"

// ClaudeVars returns the environment variables that run the real Claude Code
// CLI offline against a fake at baseURL with home as HOME: a bearer token (so
// no "use this API key?" prompt), no telemetry, no non-essential traffic (no
// title generation, auto-mode classifier or other background calls) and
// never the auto-updater, which otherwise runs `npm install --global`.
func ClaudeVars(home, baseURL string) []string {
	return []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_AUTH_TOKEN=test",
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}

// ClaudeEnv returns the current environment without the variables that could
// steer Claude Code to another account, config dir or provider (HOME,
// ANTHROPIC_*, CLAUDE_CODE_*, CLAUDE_CONFIG_DIR, CLAUDECODE), plus ClaudeVars.
func ClaudeEnv(home, baseURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "CLAUDE_CONFIG_DIR", k == "CLAUDECODE",
			strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_CODE_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, ClaudeVars(home, baseURL)...)
}

// WriteClaudeHome writes home/.claude.json so Claude Code skips onboarding
// and trusts each workdir (no folder-trust dialog). Workdirs are recorded
// both as given and with symlinks resolved, since Claude Code keys projects by
// its real working directory.
func WriteClaudeHome(home string, workdirs ...string) error {
	type project struct {
		HasTrustDialogAccepted        bool `json:"hasTrustDialogAccepted"`
		HasCompletedProjectOnboarding bool `json:"hasCompletedProjectOnboarding"`
	}
	projects := map[string]project{}
	for _, dir := range workdirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("claude home: workdir %s: %w", dir, err)
		}
		projects[abs] = project{true, true}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			projects[real] = project{true, true}
		}
	}
	b, err := json.Marshal(map[string]any{"hasCompletedOnboarding": true, "projects": projects})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("claude home: %w", err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		return fmt.Errorf("claude home: %w", err)
	}
	return nil
}

// ClaudeSettings is the content of a `claude --settings` file: the hooks
// fleetd runs and the permission policy of the session.
type ClaudeSettings struct {
	// Hooks maps a hook event ("Stop", "UserPromptSubmit", …) to the shell
	// command it runs; each gets a 10 s timeout.
	Hooks map[string]string
	// Allow are permissions.allow rules, e.g. "Bash" or "Bash(touch:*)".
	Allow []string
	// DefaultMode is permissions.defaultMode. Claude Code 2.1.328 starts in
	// "auto", whose classifier call is non-essential traffic: with it off
	// (ClaudeVars) every tool call that is not read-only waits for the user.
	// "default" makes Allow rules decide instead.
	DefaultMode string
}

// Write writes the settings as JSON to path.
func (s ClaudeSettings) Write(path string) error {
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type matcher struct {
		Hooks []hook `json:"hooks"`
	}
	type permissions struct {
		Allow       []string `json:"allow,omitempty"`
		DefaultMode string   `json:"defaultMode,omitempty"`
	}
	out := struct {
		Permissions *permissions         `json:"permissions,omitempty"`
		Hooks       map[string][]matcher `json:"hooks,omitempty"`
	}{}
	if len(s.Allow) > 0 || s.DefaultMode != "" {
		out.Permissions = &permissions{Allow: s.Allow, DefaultMode: s.DefaultMode}
	}
	if len(s.Hooks) > 0 {
		out.Hooks = map[string][]matcher{}
		for event, cmd := range s.Hooks {
			out.Hooks[event] = []matcher{{Hooks: []hook{{Type: "command", Command: cmd, Timeout: 10}}}}
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("claude settings: %w", err)
	}
	return nil
}

// RecordHookCommand is a hook command that saves the hook's stdin JSON as
// dir/<event>-<pid>.json, written atomically so a reader never sees half a
// payload. ReadHookPayloads reads them back.
func RecordHookCommand(dir, event string) string {
	tmp := filepath.Join(dir, "."+event+"-$$.tmp")
	final := filepath.Join(dir, event+"-$$.json")
	return fmt.Sprintf("cat > %s && mv %s %s", shellQuote(tmp), shellQuote(tmp), shellQuote(final))
}

// shellQuote single-quotes s for sh, leaving "$$" outside the quotes so the
// shell expands it to the hook process id.
func shellQuote(s string) string {
	parts := strings.Split(s, "$$")
	for i, p := range parts {
		parts[i] = "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	return strings.Join(parts, "$$")
}

// ReadHookPayloads returns the payloads RecordHookCommand saved for event in
// dir, oldest first.
func ReadHookPayloads(dir, event string) ([]json.RawMessage, error) {
	paths, err := filepath.Glob(filepath.Join(dir, event+"-*.json"))
	if err != nil {
		return nil, err
	}
	type file struct {
		data []byte
		mod  int64
	}
	files := make([]file, 0, len(paths))
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, file{b, st.ModTime().UnixNano()})
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].mod < files[j].mod })
	out := make([]json.RawMessage, len(files))
	for i, f := range files {
		out[i] = f.data
	}
	return out, nil
}

// Claude is an isolated setup for running the real Claude Code CLI against a
// fake in one test.
type Claude struct {
	// Bin is the claude executable found on PATH.
	Bin string
	// Home is the isolated HOME holding .claude.json and ~/.claude.
	Home string
	// Workdir is a trusted, empty working directory.
	Workdir string
	// Env is the full environment for the claude process (ClaudeEnv).
	Env []string
}

// SetupClaude finds claude (see RequireClaude) and prepares temp dirs for its
// home and working directory, pointed at the fake at baseURL.
func SetupClaude(tb TB, baseURL string) Claude {
	tb.Helper()
	bin := RequireClaude(tb)
	if out, err := exec.Command(bin, "--version").Output(); err == nil {
		tb.Logf("using %s: %s", bin, strings.TrimSpace(string(out)))
	}
	c := Claude{Bin: bin, Home: tb.TempDir(), Workdir: tb.TempDir()}
	if err := WriteClaudeHome(c.Home, c.Workdir); err != nil {
		tb.Fatal(err)
	}
	c.Env = ClaudeEnv(c.Home, baseURL)
	return c
}

// RequireClaude returns the path of the claude executable on PATH. Without
// one it skips the test, unless CI=true, where a missing CLI is a failure.
func RequireClaude(tb TB) string {
	tb.Helper()
	bin, err := exec.LookPath("claude")
	if err == nil {
		return bin
	}
	msg := "claude not on PATH: run `export PATH=\"$(.ci/install-claude.sh):$PATH\"` to install Claude Code " + ClaudeVersion
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// CodexVersion is the Codex CLI release fleetd's codex kind was measured
// against and that .ci/install-codex.sh installs.
const CodexVersion = "0.169.0"

// RequireCodex returns the path of the codex executable on PATH, as
// RequireClaude does for claude.
func RequireCodex(tb TB) string {
	tb.Helper()
	bin, err := exec.LookPath("codex")
	if err == nil {
		return bin
	}
	msg := "codex not on PATH: run `export PATH=\"$(.ci/install-codex.sh):$PATH\"` to install Codex " + CodexVersion
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}
