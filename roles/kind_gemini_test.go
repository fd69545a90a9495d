package roles_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// A gemini role launches Gemini CLI, resumes with --resume <id>, and has
// Gemini's boundary: an API key, an endpoint or a Vertex AI switch takes
// it off a Google login, so a clean role may carry none, while a gateway
// role launches with GOOGLE_GEMINI_BASE_URL set to exactly its base_url.
func TestAGeminiRoleHasGeminisLaunchAndBoundary(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{
	  "gm":  {"kind":"gemini","model":"gemini-2.5-flash"},
	  "gmg": {"kind":"gemini","env_class":"gateway","base_url":"http://127.0.0.1:9","env":{"GEMINI_API_KEY":"k"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(roles.Kinds, roles.KindGemini) {
		t.Errorf("kinds %v lack gemini", roles.Kinds)
	}
	gm, _ := c.Get("gm")
	if got, want := strings.Join(gm.Argv(""), " "), "gemini --model gemini-2.5-flash"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	if argv, ok := gm.ResumeArgv("", "3f0c5a4e-1111-4222-8333-444455556666"); !ok || strings.Join(argv, " ") != "gemini --resume 3f0c5a4e-1111-4222-8333-444455556666 --model gemini-2.5-flash" {
		t.Errorf("resume argv %q, %v", argv, ok)
	}
	for _, k := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"} {
		if err := gm.CheckEnv(map[string]string{k: ""}); !errors.Is(err, roles.ErrBoundary) {
			t.Errorf("a clean gemini pane with %s: %v, want a boundary error", k, err)
		}
	}
	if err := gm.CheckEnv(map[string]string{"ANTHROPIC_API_KEY": "sk", "OPENAI_API_KEY": "sk", "GOOGLE_CLOUD_LOCATION": "us-central1"}); err != nil {
		t.Errorf("Anthropic's and OpenAI's variables, and a region, do not move Gemini: %v", err)
	}
	for _, cmd := range []string{"/clear", "/compress"} {
		if err := gm.AllowsCommand(cmd); err != nil {
			t.Errorf("gemini's default commands: %v", err)
		}
	}
	if err := gm.AllowsCommand("/compact"); err == nil {
		t.Errorf("gemini allows /compact, which it does not have")
	}
	gmg, _ := c.Get("gmg")
	env := gmg.LaunchEnv()
	if env["GOOGLE_GEMINI_BASE_URL"] != "http://127.0.0.1:9" || env["GEMINI_API_KEY"] != "k" {
		t.Errorf("gateway gemini launch env %v", env)
	}
	if err := gmg.CheckEnv(env); err != nil {
		t.Errorf("gateway gemini: %v", err)
	}
	if err := gmg.CheckEnv(map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://elsewhere"}); !errors.Is(err, roles.ErrBoundary) {
		t.Errorf("gateway gemini pointed elsewhere: %v", err)
	}
	for _, file := range []string{
		`{"roles":{"x":{"kind":"gemini","env":{"GEMINI_API_KEY":"k"}}}}`,
		`{"roles":{"x":{"kind":"gemini","env_class":"gateway","base_url":"http://a","env":{"GOOGLE_GEMINI_BASE_URL":"http://b"}}}}`,
	} {
		if _, err := roles.Parse([]byte(file)); err == nil {
			t.Errorf("accepted %s", file)
		}
	}
}
