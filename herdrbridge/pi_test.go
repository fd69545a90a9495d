package herdrbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// The screens are the real Pi 0.73.1's (tmux capture-pane, 120×40),
// which draws inline: its editor right below the conversation, blank rows
// under its footer.
func TestPiComposerOnItsRealScreens(t *testing.T) {
	tests := []struct {
		file    string
		want    Composer
		working bool
	}{
		{"starting", Composer{}, false},
		{"empty-start", Composer{Visible: true}, false},
		{"cleared", Composer{Visible: true}, false},
		{"replied", Composer{Visible: true}, false},
		{"compacted", Composer{Visible: true}, false},
		{"after-bash", Composer{Visible: true}, false},
		{"working", Composer{Visible: true}, true},
		{"draft-one", Composer{Visible: true, Text: "a draft"}, false},
		{"draft", Composer{Visible: true, Text: "a draft\nof two lines"}, false},
		{"paste-marker", Composer{Visible: true, Text: "[paste #1 +20 lines]"}, false},
		{"shell-mode", Composer{Visible: true, Bash: true, Text: "!echo x"}, false},
		{"slash-popup", Composer{Visible: true, Text: "/"}, false},
		{"slash-after-esc", Composer{Visible: true, Text: "/"}, false},
		{"model-after-esc", Composer{Visible: true}, false},
		{"hotkeys-shown", Composer{Visible: true}, false},
		// Selectors in the editor's place: a menu, no composer.
		{"model-selector", Composer{}, false},
		{"settings-selector", Composer{}, false},
		{"resume-selector", Composer{}, false},
		{"tree-selector", Composer{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "pi", tt.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if got := (Pi{}).ParseComposer(string(b)); got != tt.want {
				t.Errorf("ParseComposer = %+v, want %+v", got, tt.want)
			}
			if got := (Pi{}).Working(string(b)); got != tt.working {
				t.Errorf("Working = %v, want %v", got, tt.working)
			}
		})
	}
	if got := (Pi{}).ParseComposer("$ "); got.Visible {
		t.Errorf("a shell prompt read as Pi's composer: %+v", got)
	}
	if !isPiRule("──────── ↑ 3 more ────────") || isPiRule("──── not a rule ────") {
		t.Errorf("isPiRule on the scroll indicator")
	}
}

func TestPiPlanTypesWhatItsEditorKeeps(t *testing.T) {
	tests := []struct {
		text, delivery string
	}{
		{"fix the tests", DeliveryPaste},
		{"two\nlines", DeliveryPaste},
		{"@nobody", DeliveryPaste},
		{"@", DeliveryPaste},
		{"#foo bar", DeliveryPaste},
		{"?", DeliveryPaste},
		{"a path /tmp/x and a ! inside", DeliveryPaste},
		{"naïve café — 日本語 ✓ 🎉", DeliveryPaste},
		{"cafe\u0301 zero\u200bwidth line\u2028sep", DeliveryPaste},
		{"\u2028starts with a line separator", DeliveryFile},
		{"ends in a no-break space\u00a0", DeliveryFile},
		{strings.Repeat("twenty lines\n", 20) + "end", DeliveryPaste},
		{"!touch x", DeliveryFile},
		{"!", DeliveryFile},
		{"/help", DeliveryFile},
		{"/", DeliveryFile},
		{"  !touch x", DeliveryFile},
		{"\n/help", DeliveryFile},
		{"a\tb", DeliveryFile},
		{"trailing ", DeliveryFile},
		{"trailing newline\n", DeliveryFile},
		{`C:\`, DeliveryFile},
		{"bell\a", DeliveryFile},
		{strings.Repeat("x", 40<<10), DeliveryFile},
	}
	for _, tt := range tests {
		if got := (Pi{}).PlanText(tt.text, Limits{}); got.Delivery != tt.delivery || got.Delivery == DeliveryFile && got.Why == "" {
			t.Errorf("PlanText(%.20q) = %+v, want %s", tt.text, got, tt.delivery)
		}
	}
}

// Install writes the agent's own Pi directory: the extension with the
// hook commands, settings, and a gateway role's provider at its base_url
// (without /v1, which the Anthropic SDK appends); the launch env points
// Pi at it and at the shared session directory.
func TestPiInstallWritesTheAgentsOwnDirectory(t *testing.T) {
	state := t.TempDir()
	role := roles.Role{Name: "w-pi", Kind: roles.KindPi, EnvClass: roles.EnvGateway, BaseURL: "http://127.0.0.1:9/v1", Model: "fake-model"}
	hook := func(arg string) string { return "exec /x/fleetd-hook " + arg }
	if err := (Pi{}).Install(Install{StateDir: state, Agent: "pi-1", Role: role, HookCommand: hook}); err != nil {
		t.Fatal(err)
	}
	env := (Pi{}).LaunchEnv(state, "pi-1")
	dir := env["PI_CODING_AGENT_DIR"]
	if dir != piHome(state, "pi-1") || env["PI_CODING_AGENT_SESSION_DIR"] != piSessions(state) || env["PI_OFFLINE"] != "1" {
		t.Errorf("launch env %v", env)
	}
	ext, err := os.ReadFile(filepath.Join(dir, "extensions", "fleetd.ts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"UserPromptSubmit":"exec /x/fleetd-hook user-prompt-submit"`, `"Stop":"exec /x/fleetd-hook stop"`, `pi.on("agent_end"`, `pi.registerCommand("clear"`} {
		if !strings.Contains(string(ext), want) {
			t.Errorf("the extension lacks %s", want)
		}
	}
	var models struct {
		Providers map[string]struct {
			BaseURL string `json:"baseUrl"`
			API     string `json:"api"`
			Models  []struct{ ID string }
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "models.json"))
	if err != nil || json.Unmarshal(b, &models) != nil {
		t.Fatalf("models.json: %v %s", err, b)
	}
	if p := models.Providers[piGatewayProvider]; p.BaseURL != "http://127.0.0.1:9" || p.API != "anthropic-messages" || len(p.Models) != 1 || p.Models[0].ID != "fake-model" {
		t.Errorf("gateway provider %+v", p)
	}
	var settings map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "settings.json")); err != nil || json.Unmarshal(b, &settings) != nil || settings["defaultModel"] != "fake-model" || settings["doubleEscapeAction"] != "none" {
		t.Errorf("settings %v %v", settings, err)
	}

	// The same agent as a clean role: the gateway's provider is gone.
	role.EnvClass, role.BaseURL = roles.EnvClean, ""
	if err := (Pi{}).Install(Install{StateDir: state, Agent: "pi-1", Role: role, HookCommand: hook}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "models.json")); !os.IsNotExist(err) {
		t.Errorf("a clean role kept the gateway's models.json: %v", err)
	}
	// In a sandbox, as outside: the sandbox binds this directory
	// (ConfigHome).
	role.Sandbox = "bwrap"
	if err := (Pi{}).Install(Install{StateDir: state, Agent: "pi-1", Role: role, HookCommand: hook}); err != nil {
		t.Errorf("a sandboxed pi role: %v", err)
	}
	if k, err := KindOf(roles.KindPi); err != nil || k.Name() != roles.KindPi {
		t.Errorf("KindOf(pi) = %v, %v", k, err)
	}
}
