package worktree_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetd/fleetd/worktree"
)

// A survey names each worktree's agent (a live one before one that
// exited), prunes only what no live agent works in and loses nothing, and
// still returns the rows of the repositories it could read.
func TestSurveyNamesAgentsAndPrunesWhatLosesNothing(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	live, done, ahead := r.ensure("live"), r.ensure("done"), r.ensure("ahead")
	r.commit(ahead.Path, "work")
	sources := []worktree.Source{{Role: "w", Repo: r.path, Base: "main"}, {Role: "gone", Repo: filepath.Join(t.TempDir(), "none")}}
	occupants := []worktree.Occupant{
		{Agent: "old", Path: live.Path}, {Agent: "live", Path: live.Path, Live: true},
		{Agent: "done", Path: done.Path}, {Agent: "other", Path: "/elsewhere", Live: true},
	}
	rows, err := worktree.Survey(ctx, sources, occupants, true)
	if err == nil {
		t.Error("Survey of a missing repository: no error")
	}
	got := map[string]worktree.Row{}
	for _, row := range rows {
		got[row.Name] = row
	}
	if len(rows) != 3 {
		t.Fatalf("rows %+v, want live, done and ahead", rows)
	}
	if g := got["live"]; g.Agent != "live" || !g.Live || g.Pruned || g.Kept != "" || g.Role != "w" || g.Repo != r.path || !g.Merged {
		t.Errorf("live: %+v", g)
	}
	if g := got["done"]; g.Agent != "done" || g.Live || !g.Pruned {
		t.Errorf("done: %+v", g)
	}
	if g := got["ahead"]; g.Agent != "" || g.Pruned || g.Kept == "" || g.Merged {
		t.Errorf("ahead: %+v", g)
	}
	for path, want := range map[string]bool{live.Path: true, done.Path: false, ahead.Path: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s exists: %t, want %t", path, err == nil, want)
		}
	}
}
