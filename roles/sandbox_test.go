package roles_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

const sandboxFile = `{
  "sandboxes": {
    "podman-backend": {
      "launch": ["podman", "run", "--rm", "-it", "--name", "fleet-{agent}", "--network", "host", "{env}",
                 "-v", "{worktree}:{worktree}", "-v", "{gitdir}:{gitdir}", "-v", "{spool}:{spool}",
                 "-v", "{settings}:{settings}:ro", "-v", "{fleetd}:{fleetd}:ro", "-w", "{worktree}", "{image}", "{command}"],
      "image": "ghcr.io/acme/backend-agent:1",
      "env": ["--env", "{name}"]
    }
  },
  "roles": {
    "w-box": {"sandbox": "bwrap", "worktree": {"repo": "/src/app", "base": "main"}},
    "w-gw": {"env_class": "gateway", "base_url": "http://gw.example", "sandbox": "podman-backend", "command": ["claude", "--settings", "{settings}"]}
  }
}`

func TestRolesNameSandboxesAndWorktrees(t *testing.T) {
	c, err := roles.Parse([]byte(sandboxFile))
	if err != nil {
		t.Fatal(err)
	}
	box, _ := c.Get("w-box")
	if box.Sandbox != "bwrap" || box.Worktree == nil || *box.Worktree != (roles.WorktreeSpec{Repo: "/src/app", Base: "main"}) {
		t.Errorf("w-box = %+v", box)
	}
	s, err := c.Sandbox("bwrap")
	if err != nil || !slices.Equal(s.Launch, roles.Bwrap.Launch) {
		t.Errorf("the built-in bwrap: %+v, %v", s, err)
	}
	if s, err := c.Sandbox("podman-backend"); err != nil || s.Name != "podman-backend" || s.Image != "ghcr.io/acme/backend-agent:1" {
		t.Errorf("podman-backend: %+v, %v", s, err)
	}
	if _, err := c.Sandbox("nope"); !errors.Is(err, roles.ErrSandbox) || !strings.Contains(err.Error(), "podman-backend") {
		t.Errorf("an unknown sandbox: %v", err)
	}
}

func TestBadSandboxesAreRefusedWithEveryProblem(t *testing.T) {
	_, err := roles.Parse([]byte(`{
	  "sandboxes": {
	    "no-command": {"launch": ["bwrap", "--ro-bind", "/", "/"]},
	    "two-commands": {"launch": ["sh", "{command}", "{command}"]},
	    "inline-command": {"launch": ["sh", "-c", "run {command}", "{command}"]},
	    "typo": {"launch": ["bwrap", "--bind", "{worktre}", "{worktree}", "{command}"]},
	    "no-image": {"launch": ["podman", "run", "{image}", "{command}"]},
	    "bad-env": {"launch": ["podman", "{env}", "{command}"], "env": ["--env", "X"], "unset": ["--unsetenv", "{value}"]},
	    "Bad Name": {"launch": ["x", "{command}"]},
	    "empty": {"launch": []}
	  },
	  "roles": {
	    "r1": {"sandbox": "missing"},
	    "r2": {"worktree": {"repo": "relative/path"}},
	    "r3": {"worktree": {"repo": ""}}
	  }
	}`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`"no-command": the template must hold the word {command} exactly once (it has it 0 times)`,
		`"two-commands": the template must hold the word {command} exactly once (it has it 2 times)`,
		`"inline-command": {command} must be a word of its own`,
		`"typo": unknown placeholder {worktre}`,
		`"no-image": uses {image} but sets no image`,
		`"bad-env": env "--env X" names no {name}`,
		`"bad-env": unset uses {value}`,
		`sandbox "Bad Name": name must match`,
		`"empty": launch must start with the sandbox's program`,
		`role "r1": sandbox: no sandbox "missing"`,
		`role "r2": worktree repo "relative/path" must be an absolute path`,
		`role "r3": worktree repo "" must be an absolute path`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %s:\n%v", want, err)
		}
	}
}

// The shipped bubblewrap profile, filled for a clean role and a gateway
// role: the agent's command last, every bind fleetd owns, and {env}
// removing exactly the boundary variables the role must not carry.
func TestTheBwrapProfileExpands(t *testing.T) {
	values := map[string]string{"worktree": "/d/worktrees/w-1", "gitdir": "/src/app/.git", "home": "/home/u", "state": "/d",
		"spool": "/d/spool", "settings": "/d/claude-settings.json", "fleetd": "/usr/bin/fleetd", "creds": "/d/auth/agents/agent-w-1.nk", "mcp": "/d/mcp/w-1.json", "herdr": "/home/u/.config/herdr/herdr.sock",
		"agent": "w-1", "role": "w-box"}
	cleanEnv := map[string]string{"FLEET_AGENT_ID": "w-1"}
	claudeHome := []roles.ConfigPath{{Path: "/home/u/.claude", Write: true, Dir: true}, {Path: "/home/u/.claude.json", Write: true}}
	argv, err := roles.Bwrap.Expand(roles.LaunchVars{Command: []string{"claude", "--settings", "/d/claude-settings.json"},
		Env: cleanEnv, Unset: roles.Unsets(cleanEnv), Config: claudeHome, Values: values})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(argv, " ")
	for _, want := range []string{
		"bwrap --die-with-parent ",
		" --ro-bind / / ",
		" --tmpfs /tmp --tmpfs /d --bind /d/worktrees/w-1 /d/worktrees/w-1 --bind /src/app/.git /src/app/.git ",
		" --bind /home/u/.claude /home/u/.claude --bind /home/u/.claude.json /home/u/.claude.json ",
		" --bind /d/spool /d/spool --ro-bind /d/claude-settings.json /d/claude-settings.json --ro-bind /usr/bin/fleetd /usr/bin/fleetd ",
		" --ro-bind /d/auth/agents/agent-w-1.nk /d/auth/agents/agent-w-1.nk --ro-bind /d/mcp/w-1.json /d/mcp/w-1.json ",
		" --ro-bind /dev/null /home/u/.config/herdr/herdr.sock --chdir /d/worktrees/w-1 ",
		" --unsetenv ANTHROPIC_BASE_URL --unsetenv ANTHROPIC_API_KEY ",
		" -- claude --settings /d/claude-settings.json",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the clean role's launch lacks %q:\n%s", want, line)
		}
	}
	if !strings.HasSuffix(line, " -- claude --settings /d/claude-settings.json") {
		t.Errorf("the agent's command is not last:\n%s", line)
	}
	if got := strings.Count(line, "--unsetenv"); got != len(roles.BoundaryVars) {
		t.Errorf("%d variables removed for a clean role, want all %d boundary variables", got, len(roles.BoundaryVars))
	}
	if strings.Contains(line, "FLEET_AGENT_ID") {
		t.Errorf("bwrap inherits the pane's environment: nothing is set on its command line:\n%s", line)
	}

	gwEnv := map[string]string{"FLEET_AGENT_ID": "w-1", "ANTHROPIC_BASE_URL": "http://gw.example", "ANTHROPIC_AUTH_TOKEN": "t"}
	argv, err = roles.Bwrap.Expand(roles.LaunchVars{Command: []string{"claude"}, Env: gwEnv, Unset: roles.Unsets(gwEnv), Values: values})
	if err != nil {
		t.Fatal(err)
	}
	line = strings.Join(argv, " ")
	if strings.Contains(line, "--unsetenv ANTHROPIC_BASE_URL ") || strings.Contains(line, "--unsetenv ANTHROPIC_AUTH_TOKEN ") ||
		!strings.Contains(line, "--unsetenv ANTHROPIC_API_KEY ") {
		t.Errorf("a gateway role keeps its URL and token and drops the rest:\n%s", line)
	}

	missing := map[string]string{}
	for k, v := range values {
		if k != "herdr" {
			missing[k] = v
		}
	}
	if _, err := roles.Bwrap.Expand(roles.LaunchVars{Command: []string{"claude"}, Values: missing}); !errors.Is(err, roles.ErrSandbox) || !strings.Contains(err.Error(), "{herdr}") {
		t.Errorf("a value not known: %v, want ErrSandbox naming {herdr}", err)
	}
}

func TestAContainerGetsTheGuardedEnvironmentByName(t *testing.T) {
	c, err := roles.Parse([]byte(sandboxFile))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c.Sandbox("podman-backend")
	env := map[string]string{"FLEET_AGENT_ID": "w-2", "FLEET_NATS_TOKEN": "secret", "ANTHROPIC_BASE_URL": "http://gw.example"}
	argv, err := s.Expand(roles.LaunchVars{Command: []string{"claude", "--settings", "/d/s.json"}, Env: env,
		Values: map[string]string{"worktree": "/w", "gitdir": "/g", "spool": "/sp", "settings": "/d/s.json", "fleetd": "/f", "agent": "w-2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "podman run --rm -it --name fleet-w-2 --network host --env ANTHROPIC_BASE_URL --env FLEET_AGENT_ID --env FLEET_NATS_TOKEN " +
		"-v /w:/w -v /g:/g -v /sp:/sp -v /d/s.json:/d/s.json:ro -v /f:/f:ro -w /w ghcr.io/acme/backend-agent:1 claude --settings /d/s.json"
	if got := strings.Join(argv, " "); got != want {
		t.Errorf("argv\n%s\nwant\n%s", got, want)
	}
}

// Another kind's config home fills {config} the same way: its writable
// directories first, then fleetd's files in them read-only (bound over
// them, so they stay so); its own boundary variables are removed.
func TestTheBwrapProfileBindsAnyKindsConfigHome(t *testing.T) {
	values := map[string]string{"worktree": "/d/worktrees/cx-1", "gitdir": "/src/app/.git", "home": "/home/u", "state": "/d",
		"spool": "/d/spool", "settings": "/d/claude-settings.json", "fleetd": "/usr/bin/fleetd", "creds": "/d/no-nats-key", "mcp": "/d/no-mcp-config", "herdr": "/run/herdr.sock",
		"agent": "cx-1", "role": "w-codex"}
	codex := roles.Role{Kind: roles.KindCodex}
	env := map[string]string{"FLEET_AGENT_ID": "cx-1", "CODEX_HOME": "/d/codex/cx-1"}
	argv, err := roles.Bwrap.Expand(roles.LaunchVars{Command: []string{"codex"}, Env: env, Unset: codex.Unsets(env),
		Config: []roles.ConfigPath{{Path: "/d/codex/cx-1/hooks.json"}, {Path: "/d/codex/cx-1", Write: true, Dir: true}}, Values: values})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(argv, " ")
	if want := " --tmpfs /d --bind /d/worktrees/cx-1 /d/worktrees/cx-1 --bind /src/app/.git /src/app/.git --bind /d/codex/cx-1 /d/codex/cx-1 --ro-bind /d/codex/cx-1/hooks.json /d/codex/cx-1/hooks.json --bind /d/spool "; !strings.Contains(line, want) {
		t.Errorf("the codex agent's launch lacks %q:\n%s", want, line)
	}
	if strings.Contains(line, ".claude") {
		t.Errorf("a codex agent gets Claude Code's state:\n%s", line)
	}
	if got, want := strings.Count(line, "--unsetenv"), len(roles.CodexBoundaryVars); got != want || !strings.Contains(line, "--unsetenv OPENAI_API_KEY") {
		t.Errorf("%d variables removed for a clean codex role, want Codex's %d:\n%s", got, want, line)
	}
	if _, err := roles.Bwrap.Expand(roles.LaunchVars{Command: []string{"codex"}, Config: []roles.ConfigPath{{Path: "rel", Write: true}}, Values: values}); !errors.Is(err, roles.ErrSandbox) {
		t.Errorf("a relative config path: %v, want ErrSandbox", err)
	}
}

// Every kind may run in the shipped sandbox; a kind that keeps its config
// home in fleetd's state directory may not run in one that does not bind
// it ({config}), and a template with {config} says how to bind.
func TestEveryKindRunsInASandboxThatBindsItsConfigHome(t *testing.T) {
	for _, kind := range roles.Kinds {
		if _, err := roles.Parse([]byte(`{"roles":{"x":{"kind":"` + kind + `","sandbox":"bwrap"}}}`)); err != nil {
			t.Errorf("a %s role in bwrap: %v", kind, err)
		}
	}
	box := `"sandboxes":{"box":{"launch":["box","--bind","{home}/.claude","{command}"]}}`
	if _, err := roles.Parse([]byte(`{` + box + `,"roles":{"x":{"sandbox":"box"}}}`)); err != nil {
		t.Errorf("a claude role in a template binding ~/.claude itself: %v", err)
	}
	for _, kind := range []string{roles.KindCodex, roles.KindGemini, roles.KindOpenCode, roles.KindPi} {
		_, err := roles.Parse([]byte(`{` + box + `,"roles":{"x":{"kind":"` + kind + `","sandbox":"box"}}}`))
		if !errors.Is(err, roles.ErrSandbox) || !strings.Contains(err.Error(), "a "+kind+" agent needs its config home bound: the template has no {config}") {
			t.Errorf("a %s role in a sandbox without {config}: %v", kind, err)
		}
	}
	_, err := roles.Parse([]byte(`{"sandboxes":{
	  "no-bind": {"launch":["box","{config}","{command}"]},
	  "twice": {"launch":["box","{config}","{config}","{command}"],"bind":["-v","{path}:{path}"],"ro_bind":["-v","{path}:{path}:ro"]},
	  "bad-bind": {"launch":["box","{config}","{command}"],"bind":["-v","{name}"],"ro_bind":["-v","{path}:{path}:ro"]},
	  "inline": {"launch":["box","-v={config}","{command}"]}
	},"roles":{}}`))
	for _, want := range []string{
		`"no-bind": uses {config} but does not say how to bind a path`,
		`"twice": {config} more than once`,
		`"bad-bind": bind "-v {name}" names no {path}`,
		`"inline": {config} must be a word of its own`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %s:\n%v", want, err)
		}
	}
}
