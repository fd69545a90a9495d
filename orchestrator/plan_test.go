package orchestrator_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/orchestrator"
)

func TestParsePlan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plan  string
		wants []string // substrings of the error; none: valid
	}{
		{name: "valid", plan: `{"goal":"g","tasks":[{"id":"a","to":"role:w","instructions":"x"},
			{"id":"b","to":"session:main-a","instructions":"y","needs":["a"],"context":{"keys":["k"],"tags":["t"]},"budget":10}],
			"context":[{"key":"k","tags":["t"],"text":"v"}],"sessions":[{"name":"main-a","role":"main","cap":100}]}`},
		{name: "unknown field", plan: `{"tasks":[{"id":"a","to":"w-1","need":["b"]}]}`, wants: []string{"unknown field"}},
		{name: "no tasks", plan: `{"goal":"g"}`, wants: []string{"no tasks"}},
		{name: "every problem at once", plan: `{"tasks":[
			{"id":"a","to":"role:W!"},{"id":"a","to":"w-1"},{"id":"b","to":"bogus:x","needs":["zz"]},{"id":"bad id","to":"w-1","budget":-1}],
			"context":[{"key":"rollup:a","text":"x"},{"text":"y"}]}`,
			wants: []string{"duplicate id", `role "W!"`, `unknown kind "bogus"`, `unknown task "zz"`, "bad id", "budget -1", "reserved for rollups", "has no key"}},
		{name: "a command task", plan: `{"tasks":[{"id":"a","to":"w-1","command":"/clear"},{"id":"b","to":"w-1","instructions":"go","needs":["a"]}]}`},
		{name: "a task types instructions or a command", plan: `{"tasks":[{"id":"a","to":"w-1","command":"/clear","instructions":"x"},
			{"id":"b","to":"w-1"},{"id":"c","to":"w-1","command":"/compact","context":{"keys":["k"]}}]}`,
			wants: []string{`task "a": give instructions or a command, not both`, `task "b": no instructions`, `task "c": a command task takes no context`}},
		{name: "cycle", plan: `{"tasks":[{"id":"a","to":"w-1","needs":["c"]},{"id":"b","to":"w-1","needs":["a"]},{"id":"c","to":"w-1","needs":["b"]}]}`,
			wants: []string{"dependency cycle a → c → b → a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := orchestrator.ParsePlan([]byte(tc.plan))
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, orchestrator.ErrInvalidPlan) {
				t.Fatalf("err = %v, want ErrInvalidPlan", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error misses %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestReadPlanNamesTheFileOfABadPlan(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	for path, plan := range map[string]string{good: `{"goal":"g","tasks":[{"id":"a","to":"w-1","instructions":"x"}]}`, bad: `{"goal":"g"}`} {
		if err := os.WriteFile(path, []byte(plan), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := orchestrator.ReadPlan(good); err != nil || p.Goal != "g" {
		t.Errorf("ReadPlan(good) = %+v, %v", p, err)
	}
	if _, err := orchestrator.ReadPlan(bad); !errors.Is(err, orchestrator.ErrInvalidPlan) || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("ReadPlan(bad) = %v, want ErrInvalidPlan prefixed with the path", err)
	}
	if _, err := orchestrator.ReadPlan(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadPlan(missing) = %v", err)
	}
}
