package roles_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// A pi role launches Pi, resumes with --session <id>, and has Pi's
// boundary: a provider's API key takes it off its logins, so a clean role
// may carry none, while a gateway role's endpoint goes in the models.json
// fleetd writes (no base-URL variable). /clear is fleetd's extension's.
func TestAPiRoleHasPisLaunchAndBoundary(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{
	  "pi":  {"kind":"pi","model":"claude-x"},
	  "pig": {"kind":"pi","env_class":"gateway","base_url":"http://127.0.0.1:9","model":"fake-model","env":{"ANTHROPIC_API_KEY":"k"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(roles.Kinds, ","), roles.KindPi) {
		t.Errorf("kinds %v lack pi", roles.Kinds)
	}
	pi, _ := c.Get("pi")
	if got, want := strings.Join(pi.Argv(""), " "), "pi --model claude-x"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	if argv, ok := pi.ResumeArgv("", "01a23d6d-06e8-762e-9a94-681954c2af65"); !ok || strings.Join(argv, " ") != "pi --session 01a23d6d-06e8-762e-9a94-681954c2af65 --model claude-x" {
		t.Errorf("resume argv %q, %v", argv, ok)
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "AWS_ACCESS_KEY_ID"} {
		if err := pi.CheckEnv(map[string]string{k: "sk"}); !errors.Is(err, roles.ErrBoundary) {
			t.Errorf("a clean pi pane with %s: %v, want a boundary error", k, err)
		}
	}
	if err := pi.CheckEnv(map[string]string{"GITHUB_TOKEN": "t", "AWS_PROFILE": "p", "ANTHROPIC_BASE_URL": "http://x"}); err != nil {
		t.Errorf("variables Pi does not leave its logins for: %v", err)
	}
	for _, cmd := range []string{"/new", "/clear", "/compact"} {
		if err := pi.AllowsCommand(cmd); err != nil {
			t.Errorf("pi's default commands: %v", err)
		}
	}
	if err := pi.AllowsCommand("/quit"); err == nil {
		t.Errorf("a pi role allows /quit by default")
	}
	pig, _ := c.Get("pig")
	env := pig.LaunchEnv()
	if _, ok := env["ANTHROPIC_BASE_URL"]; ok || env["ANTHROPIC_API_KEY"] != "k" {
		t.Errorf("gateway pi launch env %v", env)
	}
	if err := pig.CheckEnv(env); err != nil {
		t.Errorf("gateway pi: %v", err)
	}
	if _, err := roles.Parse([]byte(`{"roles":{"x":{"kind":"pi","env":{"OPENROUTER_API_KEY":"k"}}}}`)); err == nil || !strings.Contains(err.Error(), "OPENROUTER_API_KEY") {
		t.Errorf("a clean pi role with OPENROUTER_API_KEY: %v", err)
	}
}

// An inbox role (a main) of every kind is accepted: Pi, which has no MCP
// client, gets fleetd's tools through fleetd's extension.
func TestAnInboxRoleOfEveryKindIsAccepted(t *testing.T) {
	for _, kind := range []string{"claude", "codex", "gemini", "opencode", "pi"} {
		if _, err := roles.Parse([]byte(`{"roles":{"main":{"kind":"` + kind + `","inbox":true}}}`)); err != nil {
			t.Errorf("an inbox %s role: %v", kind, err)
		}
	}
}
