package claudehook

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/worktree"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// A Stop hook of an agent in its own worktree records where the branch
// stands after the turn, so a lead can review or merge what that turn
// did; an agent without one records nothing, and a worktree that cannot
// be read does not hold the reply back.
func TestAReplyRecordsTheBranchHeadAfterTheTurn(t *testing.T) {
	f := startFleet(t)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	git := func(dir string, args ...string) string {
		t.Helper()
		return worktreetest.Git(t, dir, args...)
	}
	worktreetest.NewRepo(t, repo)
	wt, err := worktree.Ensure(context.Background(), worktree.Spec{Repo: repo, Dir: filepath.Join(root, "wt"), Name: agent})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt.Path, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(wt.Path, "add", "a.txt")
	git(wt.Path, "commit", "-q", "-m", "the turn's work")
	if err := os.WriteFile(filepath.Join(wt.Path, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := git(wt.Path, "rev-parse", "HEAD")

	spool := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
		want events.Worktree
	}{
		{"in its worktree", []string{"FLEET_WORKTREE", wt.Path, "FLEET_WORKTREE_BASE", "main"},
			events.Worktree{Branch: "fleet/" + agent, Head: head, Dirty: 1, Ahead: 1}},
		{"without one", nil, events.Worktree{}},
		{"with a base that is gone", []string{"FLEET_WORKTREE", wt.Path, "FLEET_WORKTREE_BASE", "gone"},
			events.Worktree{Branch: "fleet/" + agent, Head: head, Dirty: 1}},
		{"with a worktree that is gone", []string{"FLEET_WORKTREE", filepath.Join(root, "nowhere")}, events.Worktree{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, err := run(t, "stop", payloads[Stop], paneEnv(f.url, spool, tc.env...))
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if got := f.lastReplied(t); got.Reply != "ECHO: second task" || got.Worktree != tc.want {
				t.Errorf("replied %q with worktree %+v, want %+v (stderr %s)", got.Reply, got.Worktree, tc.want, stderr)
			}
		})
	}
}
