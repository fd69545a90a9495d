package herdrbridge

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/roles"
)

// Every kind says where its agent's config home is, so one sandbox
// template ({config}) runs an agent of any kind: the directory its
// LaunchEnv points the CLI at is writable, fleetd's hook files in it are
// read-only, and nothing of another agent's is in it.
func TestEveryKindHasAConfigHome(t *testing.T) {
	state, home := "/d", "/home/u"
	for _, name := range roles.Kinds {
		k, err := KindOf(name)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := k.(ConfigHomer)
		if !ok {
			t.Errorf("%s says nothing of its config home: a sandbox cannot run it", name)
			continue
		}
		env := map[string]string{"HOME": home}
		for k, v := range k.LaunchEnv(state, "a-1") {
			env[k] = v
		}
		paths := h.ConfigHome(state, "a-1", env)
		if len(paths) == 0 {
			t.Errorf("%s: no config home", name)
		}
		var writable []string
		for _, p := range paths {
			if !filepath.IsAbs(p.Path) {
				t.Errorf("%s: %q is not absolute", name, p.Path)
			}
			if strings.Contains(p.Path, "a-2") {
				t.Errorf("%s: %q", name, p.Path)
			}
			if p.Write {
				writable = append(writable, p.Path)
			}
		}
		for _, p := range paths {
			if !p.Write && !slices.ContainsFunc(writable, func(dir string) bool { return strings.HasPrefix(p.Path, dir+"/") }) {
				t.Errorf("%s: the read-only %q is in no writable directory of its home", name, p.Path)
			}
		}
		for _, v := range []string{"CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"} {
			if dir, set := env[v]; set && !slices.Contains(writable, dir) {
				t.Errorf("%s: its %s %s is not writable in its config home %v", name, v, dir, writable)
			}
		}
	}
	if got := (OpenCode{}).ConfigHome(state, "a-1", map[string]string{"HOME": home, "XDG_DATA_HOME": "/x/data"}); !slices.Contains(got, roles.ConfigPath{Path: "/x/data/opencode", Write: true, Dir: true}) ||
		!slices.Contains(got, roles.ConfigPath{Path: "/home/u/.local/state/opencode", Write: true, Dir: true}) {
		t.Errorf("OpenCode's data and state directories: %+v", got)
	}
}
