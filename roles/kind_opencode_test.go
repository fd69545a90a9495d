package roles_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// An opencode role launches OpenCode (its model as OpenCode's
// provider/model), resumes with --session, and has
// OpenCode's boundary: a provider's key or endpoint, or a config passed
// in whole, takes it off the user's own login, so a clean role may carry
// none; a gateway role's endpoint goes in the agent's config (no
// base-URL variable) and its key is the pane's ANTHROPIC_API_KEY.
func TestAnOpenCodeRoleHasOpenCodesLaunchAndBoundary(t *testing.T) {
	if !slices.Contains(roles.Kinds, roles.KindOpenCode) {
		t.Fatalf("kinds %v lack opencode", roles.Kinds)
	}
	c, err := roles.Parse([]byte(`{"roles":{
	  "oc":  {"kind":"opencode","model":"anthropic/claude-sonnet-4-5"},
	  "ocg": {"kind":"opencode","env_class":"gateway","base_url":"http://127.0.0.1:9/v1","model":"fleet/m","env":{"ANTHROPIC_API_KEY":"k"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := c.Get("oc")
	if got, want := strings.Join(oc.Argv(""), " "), "opencode --model anthropic/claude-sonnet-4-5"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	if argv, ok := oc.ResumeArgv("", "ses_dc293dbceffeDlWRXugk2lL97T"); !ok || strings.Join(argv, " ") != "opencode --session ses_dc293dbceffeDlWRXugk2lL97T --model anthropic/claude-sonnet-4-5" {
		t.Errorf("resume argv %q, %v", argv, ok)
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "AWS_BEARER_TOKEN_BEDROCK", "OPENCODE_CONFIG_CONTENT"} {
		if err := oc.CheckEnv(map[string]string{k: "x"}); !errors.Is(err, roles.ErrBoundary) {
			t.Errorf("a clean opencode pane with %s: %v, want a boundary error", k, err)
		}
	}
	if err := oc.CheckEnv(map[string]string{"OPENCODE_CONFIG_DIR": "/state/opencode/a", "HOME": "/h"}); err != nil {
		t.Errorf("the config dir fleetd gives the agent is no boundary: %v", err)
	}
	for _, cmd := range []string{"/new", "/compact"} {
		if err := oc.AllowsCommand(cmd); err != nil {
			t.Errorf("opencode's default commands: %v", err)
		}
	}
	ocg, _ := c.Get("ocg")
	env := ocg.LaunchEnv()
	if _, ok := env["ANTHROPIC_BASE_URL"]; ok || env["ANTHROPIC_API_KEY"] != "k" {
		t.Errorf("gateway opencode launch env %v", env)
	}
	if err := ocg.CheckEnv(env); err != nil {
		t.Errorf("gateway opencode: %v", err)
	}
	if _, err := roles.Parse([]byte(`{"roles":{"x":{"kind":"opencode","env":{"ANTHROPIC_API_KEY":"k"}}}}`)); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("a clean opencode role with ANTHROPIC_API_KEY: %v", err)
	}
}

// A gateway role of a kind whose endpoint lives in the config fleetd
// writes (codex, opencode, pi) may not carry an endpoint variable of its
// kind's boundary that points elsewhere; the role's own base_url, or no
// endpoint variable, is fine.
func TestGatewayRolesRefuseAnotherEndpoint(t *testing.T) {
	for kind, vars := range map[string][]string{
		"codex":    {"OPENAI_BASE_URL"},
		"opencode": {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"},
		"pi":       {"AZURE_OPENAI_BASE_URL"}, // Pi reads no Anthropic or OpenAI base-URL variable (kind_pi.go)
	} {
		c, err := roles.Parse([]byte(`{"roles":{"g":{"kind":"` + kind + `","env_class":"gateway","base_url":"http://gw:4000","model":"fleet/m"}}}`))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		g, _ := c.Get("g")
		for _, v := range vars {
			if err := g.CheckEnv(map[string]string{v: "http://elsewhere"}); !errors.Is(err, roles.ErrBoundary) {
				t.Errorf("%s gateway role with %s elsewhere: %v, want ErrBoundary", kind, v, err)
			}
			if err := g.CheckEnv(map[string]string{v: "http://gw:4000"}); err != nil {
				t.Errorf("%s gateway role with %s at its own base_url: %v", kind, v, err)
			}
		}
		if err := g.CheckEnv(map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}); err != nil {
			t.Errorf("%s gateway role with keys only: %v", kind, err)
		}
	}
}
