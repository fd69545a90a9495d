package herdrbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// The screens are the real OpenCode 1.18.33's (tmux capture-pane, 200×50),
// in a new session (the box centred, its placeholder), in a session (the
// box at the bottom, the sidebar beside it), with popups, shell mode and
// a dialog.
func TestOpenCodeComposerOnItsRealScreens(t *testing.T) {
	tests := []struct {
		file    string
		want    Composer
		working bool
	}{
		{"empty-start", Composer{Visible: true}, false},
		{"resumed-ready", Composer{Visible: true}, false},
		{"idle-after-reply", Composer{Visible: true}, false},
		{"cleared", Composer{Visible: true}, false},
		{"working", Composer{Visible: true}, true},
		{"draft", Composer{Visible: true, Text: "draft text here"}, false},
		{"draft-multiline", Composer{Visible: true, Text: "first line\n\n  third, indented"}, false},
		{"shell-mode", Composer{Visible: true, Bash: true}, false},
		{"shell-draft", Composer{Visible: true, Bash: true, Text: "echo hi"}, false},
		{"shell-after-esc", Composer{Visible: true, Text: "echo hi"}, false},
		{"slash-popup", Composer{Visible: true, Text: "/"}, false},
		{"at-popup", Composer{Visible: true, Text: "@nobody"}, false},
		{"at-after-esc", Composer{Visible: true, Text: "@nobody"}, false},
		{"agent-dialog", Composer{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "opencode", tt.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if got := (OpenCode{}).ParseComposer(string(b)); got != tt.want {
				t.Errorf("ParseComposer = %+v, want %+v", got, tt.want)
			}
			if got := (OpenCode{}).Working(string(b)); got != tt.working {
				t.Errorf("Working = %v, want %v", got, tt.working)
			}
		})
	}
	if got := (OpenCode{}).ParseComposer("$ "); got.Visible {
		t.Errorf("a shell prompt read as OpenCode's composer: %+v", got)
	}
}

func TestOpenCodePlanTypesWhatItsComposerKeeps(t *testing.T) {
	tests := []struct {
		text, delivery string
	}{
		{"fix the tests", DeliveryPaste},
		{"two\nlines", DeliveryPaste},
		{"hello @nobody answer", DeliveryPaste},
		{"!touch x", DeliveryPaste},
		{"!", DeliveryPaste},
		{"?", DeliveryPaste},
		{"a\tb", DeliveryPaste},
		{"trailing ", DeliveryPaste},
		{"naïve café — 日本語 ✓", DeliveryPaste},
		{strings.Repeat("0123456789abcdef", 190), DeliveryPaste},
		{"/help", DeliveryFile},
		{"/", DeliveryFile},
		{"  /help after spaces", DeliveryFile},
		{"@file", DeliveryFile},
		{"look at @main.go", DeliveryFile},
		{"shot.PNG", DeliveryFile},
		{"a\rb", DeliveryFile},
		{"zero\u200bwidth", DeliveryFile},
		{strings.Repeat("x", 4000), DeliveryFile},
	}
	for _, tt := range tests {
		if got := (OpenCode{}).PlanText(tt.text, Limits{}); got.Delivery != tt.delivery || got.Delivery == DeliveryFile && got.Why == "" {
			t.Errorf("PlanText(%.20q) = %+v, want %s", tt.text, got, tt.delivery)
		}
	}
}

// The agent's config directory holds the plugin (each hook's command in
// it), the config (paste summary off; a gateway role's endpoint as the
// fleet provider keyed by the pane's ANTHROPIC_API_KEY) and the files
// that keep OpenCode from npm-installing its plugin package at start.
func TestOpenCodeInstallWritesTheAgentsOwnConfigDir(t *testing.T) {
	state := t.TempDir()
	role := roles.Role{Name: "w", Kind: roles.KindOpenCode, EnvClass: roles.EnvGateway, BaseURL: "http://127.0.0.1:9/v1", Model: "fleet/fake-model"}
	hook := func(arg string) string { return "'/x/fleetd-hook' " + arg }
	if err := (OpenCode{}).Install(Install{StateDir: state, Agent: "a-1", Role: role, HookCommand: hook}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(state, "opencode", "a-1")
	if got := (OpenCode{}).LaunchEnv(state, "a-1")["OPENCODE_CONFIG_DIR"]; got != dir {
		t.Errorf("OPENCODE_CONFIG_DIR %q, want %q", got, dir)
	}
	plugin, err := os.ReadFile(filepath.Join(dir, "plugins", "fleetd.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range openCodeHooks {
		if want, _ := json.Marshal(hook(h)); !strings.Contains(string(plugin), string(want)) {
			t.Errorf("the plugin lacks the %s hook %s", h, want)
		}
	}
	var cfg struct {
		Model        string
		Experimental struct {
			DisablePasteSummary bool `json:"disable_paste_summary"`
		}
		Provider map[string]struct {
			NPM     string
			Options struct{ BaseURL, APIKey string }
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "opencode.json"))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	p := cfg.Provider["fleet"]
	if cfg.Model != "fleet/fake-model" || !cfg.Experimental.DisablePasteSummary || p.NPM != "@ai-sdk/anthropic" ||
		p.Options.BaseURL != role.BaseURL || p.Options.APIKey != "{env:ANTHROPIC_API_KEY}" {
		t.Errorf("opencode.json: %s", b)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if !strings.Contains(string(lock), `"@opencode-ai/plugin": "`+OpenCodeVersion+`"`) {
		t.Errorf("package-lock.json: %s", lock)
	}
	if st, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil || !st.IsDir() {
		t.Errorf("no node_modules: %v", err)
	}
	for _, model := range []string{"fake-model", "anthropic/claude-sonnet-4-5"} {
		// A bare name would be refused by OpenCode's --model on a
		// restart; a gateway role's provider is fleet's endpoint.
		bad := role
		bad.Model = model
		if err := (OpenCode{}).Install(Install{StateDir: state, Agent: "a-3", Role: bad, HookCommand: hook}); err == nil {
			t.Errorf("a gateway role with model %q was installed", model)
		}
	}
	// In a sandbox, as outside: the sandbox binds this directory
	// (ConfigHome).
	role.Sandbox = "bwrap"
	if err := (OpenCode{}).Install(Install{StateDir: state, Agent: "a-2", Role: role, HookCommand: hook}); err != nil {
		t.Errorf("an opencode role in a sandbox: %v", err)
	}
}
