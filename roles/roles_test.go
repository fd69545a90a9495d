package roles_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/roles"
)

const file = `{"roles":{
  "w-claude": {"model":"sonnet","cap":2,"tier":2},
  "w-local":  {"env_class":"gateway","base_url":"https://llm.example/anthropic","env":{"ANTHROPIC_AUTH_TOKEN":"x"},"cap":4,"tier":2}
}}`

func TestParseAppliesDefaults(t *testing.T) {
	c, err := roles.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Get("w-claude")
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "w-claude" || r.EnvClass != roles.EnvClean || r.Kind != roles.KindClaude {
		t.Errorf("role = %+v", r)
	}
	if got, want := strings.Join(r.Argv("/s.json"), " "), "claude --settings /s.json --model sonnet"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	if _, err := c.Get("nope"); !errors.Is(err, roles.ErrUnknownRole) || !strings.Contains(err.Error(), "w-local") {
		t.Errorf("unknown role: %v", err)
	}
}

func TestInvalidFilesReportEveryProblem(t *testing.T) {
	_, err := roles.Parse([]byte(`{"roles":{
	  "Bad Name": {},
	  "g": {"env_class":"gateway"},
	  "c": {"base_url":"http://x"},
	  "e": {"env":{"ANTHROPIC_BASE_URL":"http://x"}},
	  "k": {"env":{"ANTHROPIC_API_KEY":"sk"}},
	  "v": {"env":{"CLAUDE_CODE_USE_VERTEX":"1"}},
	  "z": {"env_class":"weird","cap":-1},
	  "s": {"may_spawn":["ghost"]},
	  "n": {"kind":"nano"},
	  "cs": {"kind":"codex","sandbox":"box"}
	},
	"sandboxes": {"box": {"launch": ["box", "{command}"]}}}`))
	if err == nil {
		t.Fatal("invalid file accepted")
	}
	for _, want := range []string{"Bad Name", `"g"`, `"c"`, `"e"`, `"k"`, `"v"`, "weird", "negative", `may_spawn names "ghost"`, `kind "nano": this fleetd drives claude, codex`, "a codex agent needs its config home bound"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	if _, err := roles.Parse([]byte(`{"roles":{}, "extra":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
}

func TestTheSubscriptionBoundary(t *testing.T) {
	c, err := roles.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	clean, _ := c.Get("w-claude")
	gw, _ := c.Get("w-local")
	for _, tc := range []struct {
		name string
		role roles.Role
		env  map[string]string
		ok   bool
	}{
		{"clean without overrides", clean, map[string]string{"PATH": "/bin"}, true},
		{"clean with a base URL", clean, map[string]string{"ANTHROPIC_BASE_URL": "https://llm.example/anthropic"}, false},
		{"clean with an API key", clean, map[string]string{"ANTHROPIC_API_KEY": "sk"}, false},
		{"clean with AWS region and profile only", clean, map[string]string{"AWS_REGION": "us-east-1", "AWS_PROFILE": "dev"}, true},
		{"clean on Bedrock", clean, map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1"}, false},
		{"clean with AWS access keys", clean, map[string]string{"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"}, false},
		{"clean with a Bedrock bearer token", clean, map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "t"}, false},
		{"clean on Vertex", clean, map[string]string{"CLAUDE_CODE_USE_VERTEX": "1"}, false},
		{"clean with a Vertex project", clean, map[string]string{"ANTHROPIC_VERTEX_PROJECT_ID": "p"}, false},
		{"clean with Google credentials", clean, map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/k.json"}, false},
		{"clean on Foundry", clean, map[string]string{"CLAUDE_CODE_USE_FOUNDRY": "1"}, false},
		{"clean with an empty provider switch", clean, map[string]string{"CLAUDE_CODE_USE_BEDROCK": ""}, false},
		{"gateway with its URL", gw, gw.LaunchEnv(), true},
		{"gateway without a URL", gw, map[string]string{}, false},
		{"gateway with another URL", gw, map[string]string{"ANTHROPIC_BASE_URL": "https://evil.example"}, false},
	} {
		err := tc.role.CheckEnv(tc.env)
		if tc.ok && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, roles.ErrBoundary) {
			t.Errorf("%s: got %v, want ErrBoundary", tc.name, err)
		}
	}
	if gw.LaunchEnv()["ANTHROPIC_AUTH_TOKEN"] != "x" {
		t.Error("gateway role env lost")
	}
}

func TestResumeArgv(t *testing.T) {
	claude := roles.Role{Command: []string{"claude", "--settings", "{settings}"}}
	custom := roles.Role{Command: []string{"/bin/agent", "{resume}", "--settings={settings}"}}
	plain := roles.Role{Command: []string{"/bin/agent", "--x"}}
	cases := []struct {
		role   roles.Role
		id     string
		want   string
		wantOK bool
	}{
		{claude, "", "claude --settings /s.json", true},
		{claude, "sid-1", "claude --settings /s.json --resume sid-1", true},
		{custom, "", "/bin/agent --settings=/s.json", true},
		{custom, "sid-1", "/bin/agent --resume sid-1 --settings=/s.json", true},
		{plain, "", "/bin/agent --x", true},
		{plain, "sid-1", "/bin/agent --x", false},
	}
	for _, c := range cases {
		argv, ok := c.role.ResumeArgv("/s.json", c.id)
		if got := strings.Join(argv, " "); got != c.want || ok != c.wantOK {
			t.Errorf("ResumeArgv(%v, %q) = %q, %v; want %q, %v", c.role.Command, c.id, got, ok, c.want, c.wantOK)
		}
	}
	if got := strings.Join(custom.Argv("/s.json"), " "); got != "/bin/agent --settings=/s.json" {
		t.Errorf("Argv drops {resume}: got %q", got)
	}
}

func TestMaySpawnAllowsOnlyTheRolesItNames(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{"lead":{"may_spawn":["w"]},"w":{},"main":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	lead, _ := c.Get("lead")
	if err := lead.AllowsSpawn("w"); err != nil {
		t.Errorf("lead may spawn w: %v", err)
	}
	if err := lead.AllowsSpawn("main"); !errors.Is(err, roles.ErrNotAllowed) || !strings.Contains(err.Error(), "only w") {
		t.Errorf("lead spawning main: %v, want not allowed naming what it may", err)
	}
	w, _ := c.Get("w")
	if err := w.AllowsSpawn("w"); !errors.Is(err, roles.ErrNotAllowed) || !strings.Contains(err.Error(), "may_spawn") {
		t.Errorf("w spawning w: %v, want not allowed saying how to allow it", err)
	}
}

func TestRestartPolicy(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{
		"plain":{},
		"crashy":{"restart":"on-failure","restart_max":3,"restart_window":"1m","restart_backoff":"2s"},
		"always":{"restart":"always"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := c.Get("plain")
	if plain.Restart != roles.RestartNever || plain.Restarts(false) || plain.RestartMax != 5 || time.Duration(plain.RestartWindow) != 10*time.Minute {
		t.Errorf("plain role: %+v", plain)
	}
	crashy, _ := c.Get("crashy")
	if !crashy.Restarts(false) || crashy.Restarts(true) || crashy.RestartMax != 3 || time.Duration(crashy.RestartWindow) != time.Minute {
		t.Errorf("on-failure role: %+v", crashy)
	}
	var delays []time.Duration
	for n := range 7 {
		delays = append(delays, crashy.RestartDelay(n))
	}
	if want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}; !slices.Equal(delays, want) {
		t.Errorf("delays %v, want %v", delays, want)
	}
	always, _ := c.Get("always")
	if !always.Restarts(true) || !always.Restarts(false) {
		t.Errorf("always role: %+v", always)
	}
	for _, bad := range []string{`{"roles":{"r":{"restart":"sometimes"}}}`, `{"roles":{"r":{"restart_window":"soon"}}}`, `{"roles":{"r":{"restart_max":-1}}}`} {
		if _, err := roles.Parse([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// Worktrees names each repository and base once, under the first role by
// name, and only the asked role's with only.
func TestWorktreesListsEachRepositoryOnce(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{
  "b": {"worktree":{"repo":"/r1","base":"main"}},
  "a": {"worktree":{"repo":"/r1","base":"main"}},
  "c": {"worktree":{"repo":"/r1","base":"dev"}},
  "d": {}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Worktrees("")
	want := []roles.RoleWorktree{
		{Role: "a", WorktreeSpec: roles.WorktreeSpec{Repo: "/r1", Base: "main"}},
		{Role: "c", WorktreeSpec: roles.WorktreeSpec{Repo: "/r1", Base: "dev"}},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Worktrees(\"\") = %+v, %v, want %+v", got, err, want)
	}
	if got, err := c.Worktrees("b"); err != nil || len(got) != 1 || got[0].Role != "b" {
		t.Errorf("Worktrees(b) = %+v, %v", got, err)
	}
	if got, err := c.Worktrees("d"); err == nil || !strings.Contains(err.Error(), `role "d" gives its agents no worktrees`) {
		t.Errorf("Worktrees(d) = %+v, %v, want an error naming d", got, err)
	}
	if _, err := roles.Default().Worktrees(""); err == nil {
		t.Error("Worktrees of roles without worktrees: no error")
	}
}

// A codex role launches Codex, resumes with its resume subcommand, and
// has Codex's boundary: an OpenAI key or endpoint takes it off a ChatGPT
// login, so a clean role may carry neither, while a gateway role's
// endpoint goes in the config fleetd writes (no base-URL variable).
func TestACodexRoleHasCodexsLaunchAndBoundary(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{
	  "cx":  {"kind":"codex","model":"gpt-x"},
	  "cxg": {"kind":"codex","env_class":"gateway","base_url":"http://127.0.0.1:9/v1","env":{"OPENAI_API_KEY":"k"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	cx, _ := c.Get("cx")
	if got, want := strings.Join(cx.Argv(""), " "), "codex --model gpt-x"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	if argv, ok := cx.ResumeArgv("", "01a23cfa-1fb2-7553-816a-610acbe3c4e2"); !ok || strings.Join(argv, " ") != "codex resume 01a23cfa-1fb2-7553-816a-610acbe3c4e2 --model gpt-x" {
		t.Errorf("resume argv %q, %v", argv, ok)
	}
	if err := cx.CheckEnv(map[string]string{"OPENAI_API_KEY": "sk"}); !errors.Is(err, roles.ErrBoundary) {
		t.Errorf("a clean codex pane with OPENAI_API_KEY: %v, want a boundary error", err)
	}
	if err := cx.CheckEnv(map[string]string{"ANTHROPIC_API_KEY": "sk"}); err != nil {
		t.Errorf("Anthropic's variables do not move Codex: %v", err)
	}
	if err := cx.AllowsCommand("/new"); err != nil {
		t.Errorf("codex's default commands: %v", err)
	}
	cxg, _ := c.Get("cxg")
	env := cxg.LaunchEnv()
	if _, ok := env["ANTHROPIC_BASE_URL"]; ok || env["OPENAI_API_KEY"] != "k" {
		t.Errorf("gateway codex launch env %v", env)
	}
	if err := cxg.CheckEnv(env); err != nil {
		t.Errorf("gateway codex: %v", err)
	}
	if err := cxg.CheckEnv(map[string]string{"OPENAI_BASE_URL": "http://elsewhere"}); !errors.Is(err, roles.ErrBoundary) {
		t.Errorf("gateway codex pointed elsewhere: %v", err)
	}
	if _, err := roles.Parse([]byte(`{"roles":{"x":{"kind":"codex","env":{"OPENAI_API_KEY":"k"}}}}`)); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("a clean codex role with OPENAI_API_KEY: %v", err)
	}
}

// deny_dialogs_after reads as a duration; a negative one is refused.
func TestDenyDialogsAfter(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{"w":{"deny_dialogs_after":"90s"}}}`))
	if err != nil || time.Duration(c.Roles["w"].DenyDialogsAfter) != 90*time.Second {
		t.Errorf("deny_dialogs_after 90s: %v %+v", err, c.Roles["w"])
	}
	if _, err := roles.Parse([]byte(`{"roles":{"w":{"deny_dialogs_after":"-1s"}}}`)); err == nil || !strings.Contains(err.Error(), "deny_dialogs_after") {
		t.Errorf("a negative deny_dialogs_after: %v", err)
	}
}
