package herdrbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// The screens are the real Gemini CLI 0.61.0's (tmux capture-pane,
// 120×40; the truecolor ones with COLORTERM=truecolor, which frames the
// composer).
// Gemini's row of hooks holds typing unless it names only fleetd's own
// turn hooks with no turn at work: a hook at work ("(esc to cancel"),
// another's hook, or a session's hooks (after a /clear, a prompt pasted
// under them was lost whole) hold it.
func TestGeminiHookRowHoldsTypingUnlessOnlyFleetdsTurnHooksLinger(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "gemini", "submitted-hooks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const lingering = "Executing Hooks: fleetd-user-prompt-submit, fleetd-stop"
	if !strings.Contains(string(b), lingering) {
		t.Fatalf("the screen has no %q row", lingering)
	}
	for row, busy := range map[string]bool{
		lingering:                     false,
		"Executing Hook: fleetd-stop": false,
		"Executing Hooks: fleetd-stop (1/2), fleetd-stop (2/2)":     false,
		"⠴ Executing Hook: fleetd-stop (esc to cancel, 1s)":         true,
		"Executing Hooks: fleetd-session-end, fleetd-session-start": true,
		"Executing Hook: my-linter":                                 true,
		"Executing Hooks: fleetd-stop, my-linter":                   true,
		// Names piled up past the row's end (turns in quick succession).
		"Executing Hooks: fleetd-user-prompt-submit, fleetd-stop, fleetd-user-prompt-submit, fleetd-stop, fleetd-user-prompt-su": false,
		"Executing Hooks: fleetd-stop, my-lin": true,
	} {
		screen := strings.Replace(string(b), lingering, row, 1)
		c := (Gemini{}).ParseComposer(screen)
		if got := (Gemini{}).Working(screen); got != busy || c.Visible == busy {
			t.Errorf("%q: working %v, composer %+v; want busy %v", row, got, c, busy)
		}
	}
}

func TestGeminiComposerOnItsRealScreens(t *testing.T) {
	tests := []struct {
		file    string
		want    Composer
		working bool
	}{
		{"empty-start", Composer{Visible: true}, false},
		{"cleared", Composer{Visible: true}, false},
		{"replied", Composer{Visible: true}, false},
		// Its hooks at work, or their row still up after the reply
		// (Gemini shows it 3 s from each hook's start): the empty
		// composer on screen drops an Enter, so it is no composer yet.
		{"working", Composer{}, true},
		{"hook-after-reply", Composer{}, true},
		// Only fleetd's own turn hooks still named, no turn at work: the
		// row outlives them (a mixed fleet's Gemini, after its reply).
		{"submitted-hooks", Composer{Visible: true}, false},
		{"draft", Composer{Visible: true, Text: "a draft\nof two lines"}, false},
		{"truecolor-empty", Composer{Visible: true}, false},
		{"truecolor-draft", Composer{Visible: true, Text: "a draft\nof two lines"}, false},
		{"shell-mode", Composer{Visible: true, Bash: true}, false},
		{"shell-after-esc", Composer{Visible: true}, false},
		{"slash-popup", Composer{Visible: true, Text: "/"}, false},
		{"slash-after-esc", Composer{Visible: true, Text: "/"}, false},
		{"at-popup", Composer{Visible: true, Text: "@REA"}, false},
		{"at-after-esc", Composer{Visible: true, Text: "@REA"}, false},
		// A dialog below a past prompt, and the CLI gone: no composer.
		{"loop-dialog", Composer{}, false},
		{"exited", Composer{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "gemini", tt.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if got := (Gemini{}).ParseComposer(string(b)); got != tt.want {
				t.Errorf("ParseComposer = %+v, want %+v", got, tt.want)
			}
			if got := (Gemini{}).Working(string(b)); got != tt.working {
				t.Errorf("Working = %v, want %v", got, tt.working)
			}
		})
	}
	for _, screen := range []string{"$ ", " > a past prompt\n✦ ECHO: a past prompt\n$ "} {
		if got := (Gemini{}).ParseComposer(screen); got.Visible {
			t.Errorf("%q read as Gemini's composer: %+v", screen, got)
		}
	}
}

func TestGeminiPlanTypesWhatItsComposerKeeps(t *testing.T) {
	tests := []struct {
		text, delivery string
	}{
		{"fix the tests", DeliveryPaste},
		{"two\nlines", DeliveryPaste},
		{"?", DeliveryPaste},
		{"!", DeliveryPaste},
		{"!touch x", DeliveryPaste},
		{"a\tb", DeliveryPaste},
		{"cafe\u0301 naïve — 日本語 ✓ 🎉", DeliveryPaste},
		{strings.Repeat("x", 6000), DeliveryPaste},
		{"/help", DeliveryFile},
		{"/", DeliveryFile},
		{"  /help after spaces", DeliveryFile},
		{"/tmp/x.go is broken", DeliveryFile},
		{"@file", DeliveryFile},
		{"@", DeliveryFile},
		{"hello @nobody answer", DeliveryFile},
		{"mail a@b.example", DeliveryFile},
		{" leading", DeliveryFile},
		{"trailing ", DeliveryFile},
		{"trailing newline\n", DeliveryFile},
		{`C:\`, DeliveryFile},
		{"a\u2028b", DeliveryFile},
		{"zero\u200bwidth", DeliveryFile},
		{strings.Repeat("x", 16<<10+1), DeliveryFile},
	}
	for _, tt := range tests {
		if got := (Gemini{}).PlanText(tt.text, Limits{}); got.Delivery != tt.delivery || got.Delivery == DeliveryFile && got.Why == "" {
			t.Errorf("PlanText(%.20q) = %+v, want %s", tt.text, got, tt.delivery)
		}
	}
	if p := (Gemini{}).PlanCommand("/compress"); p.Delivery != DeliveryCommand || p.Pieces[0] != "/compress" {
		t.Errorf("PlanCommand = %+v", p)
	}
	if h := (Gemini{}).HandOver("/w/.fleet/inbox/01.md", 10, "why"); strings.Contains(h, "@") || !strings.Contains(h, "/w/.fleet/inbox/01.md") {
		t.Errorf("hand-over %q: want the plain path, no @ mention", h)
	}
}

// The settings fleetd writes for a Gemini agent are in its own
// GEMINI_CLI_HOME: fleetd's hooks under Gemini's names (stderr to a log,
// since Gemini would read it as the hook's answer), the model pinned,
// the API-key login for a gateway role and the user's Google login
// linked in for a clean one.
func TestGeminiHomeHoldsTheAgentsSettings(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "oauth_creds.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	k, err := KindOf(roles.KindGemini)
	if err != nil {
		t.Fatal(err)
	}
	env := k.LaunchEnv(state, "gm-1")
	dir := filepath.Join(state, "gemini", "gm-1")
	if env["GEMINI_CLI_HOME"] != dir || env["GEMINI_CLI_TRUST_WORKSPACE"] != "true" || env["CI"] != "false" || env["GITHUB_ACTIONS"] != "false" {
		t.Errorf("launch env %v", env)
	}
	hook := func(arg string) string { return "/bin/fleetd-hook " + arg }
	gateway := roles.Role{Kind: roles.KindGemini, EnvClass: roles.EnvGateway, BaseURL: "http://127.0.0.1:9", Model: "gemini-2.5-flash"}
	if err := k.Install(Install{StateDir: state, Agent: "gm-1", Role: gateway, HookCommand: hook}); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Security struct {
			Auth struct{ SelectedType string } `json:"auth"`
		} `json:"security"`
		Model struct {
			Name                 string `json:"name"`
			DisableLoopDetection bool   `json:"disableLoopDetection"`
		} `json:"model"`
		Hooks map[string][]struct {
			Hooks []struct {
				Type, Command string
				Timeout       int
			} `json:"hooks"`
		} `json:"hooks"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ".gemini", "settings.json"))
	if err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("settings: %v\n%s", err, b)
	}
	if s.Security.Auth.SelectedType != "gemini-api-key" || s.Model.Name != "gemini-2.5-flash" || !s.Model.DisableLoopDetection {
		t.Errorf("settings %s", b)
	}
	for event, arg := range map[string]string{"SessionStart": "session-start", "BeforeAgent": "user-prompt-submit", "AfterAgent": "stop", "SessionEnd": "session-end"} {
		h := s.Hooks[event]
		want := "{ /bin/fleetd-hook " + arg + "; } 2>>'" + filepath.Join(dir, "hooks.log") + "'"
		if len(h) != 1 || len(h[0].Hooks) != 1 || h[0].Hooks[0].Command != want || h[0].Hooks[0].Type != "command" {
			t.Errorf("%s hook %+v, want %q", event, h, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, ".gemini", "oauth_creds.json")); err == nil {
		t.Errorf("a gateway agent got the user's Google login")
	}

	clean := roles.Role{Kind: roles.KindGemini, EnvClass: roles.EnvClean}
	if err := k.Install(Install{StateDir: state, Agent: "gm-1", Role: clean, HookCommand: hook}); err != nil {
		t.Fatal(err)
	}
	if to, err := os.Readlink(filepath.Join(dir, ".gemini", "oauth_creds.json")); err != nil || to != filepath.Join(home, ".gemini", "oauth_creds.json") {
		t.Errorf("the clean agent's login: %q, %v; want a link to the user's", to, err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, ".gemini", "settings.json"))
	if !strings.Contains(string(b), `"oauth-personal"`) || strings.Contains(string(b), `"name"`+": \"gemini") {
		t.Errorf("clean settings %s", b)
	}
	if err := k.Install(Install{Agent: "gm-1", Role: clean, HookCommand: hook}); err == nil {
		t.Errorf("installed without a state directory")
	}
}
