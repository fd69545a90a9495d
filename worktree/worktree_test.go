package worktree_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/worktree"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// repo is a test repository: a main checkout on branch main with one
// commit holding shared.txt.
type repo struct {
	t    *testing.T
	path string // the main checkout
	dir  string // where agent worktrees go
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	root := t.TempDir()
	r := &repo{t: t, path: filepath.Join(root, "repo"), dir: filepath.Join(root, "worktrees")}
	worktreetest.NewRepo(t, r.path)
	return r
}

func (r *repo) git(dir string, args ...string) string {
	r.t.Helper()
	return worktreetest.Git(r.t, dir, args...)
}

func (r *repo) write(dir, name, text string) {
	r.t.Helper()
	worktreetest.Write(r.t, dir, name, text)
}

func (r *repo) read(path string) string {
	r.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

func (r *repo) spec(name string) worktree.Spec {
	return worktree.Spec{Repo: r.path, Base: "main", Dir: r.dir, Name: name}
}

func (r *repo) ensure(name string) worktree.Worktree {
	r.t.Helper()
	wt, err := worktree.Ensure(context.Background(), r.spec(name))
	if err != nil {
		r.t.Fatal(err)
	}
	return wt
}

// fleetBranches lists the repository's fleet/ branches.
func (r *repo) fleetBranches() string {
	r.t.Helper()
	return r.git(r.path, "for-each-ref", "--format=%(refname:short)", "refs/heads/fleet/")
}

func TestEnsureCreatesTheAgentsBranchFromTheBaseAndReusesIt(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	wt, err := worktree.Ensure(ctx, worktree.Spec{Repo: filepath.Join(r.path, "."), Dir: r.dir, Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := worktree.Worktree{Repo: r.path, GitDir: filepath.Join(r.path, ".git"), Path: filepath.Join(r.dir, "w-1"),
		Branch: "fleet/w-1", Base: "main", Created: true, NewBranch: true}
	if wt != want {
		t.Errorf("Ensure = %+v\nwant      %+v", wt, want)
	}
	if got := r.read(filepath.Join(wt.Path, "shared.txt")); got != "from main\n" {
		t.Errorf("the worktree's shared.txt = %q", got)
	}
	if got, want := r.git(wt.Path, "rev-parse", "HEAD"), r.git(r.path, "rev-parse", "main"); got != want {
		t.Errorf("fleet/w-1 at %s, want main's %s", got, want)
	}
	// Spawned again (or resumed): the same worktree, untouched.
	r.write(wt.Path, "work.txt", "in progress\n")
	again := r.ensure("w-1")
	want.Created, want.NewBranch = false, false
	if again != want {
		t.Errorf("Ensure again = %+v\nwant            %+v", again, want)
	}
	if got := r.read(filepath.Join(wt.Path, "work.txt")); got != "in progress\n" {
		t.Errorf("the reused worktree lost its work: %q", got)
	}
}

func TestEnsureFindsTheBranchWhereverItIs(t *testing.T) {
	r := newRepo(t)
	// A branch left from an earlier worktree, with a commit of its own.
	r.git(r.path, "branch", "fleet/w-2", "main")
	elsewhere := filepath.Join(t.TempDir(), "by-hand")
	r.git(r.path, "worktree", "add", "-q", elsewhere, "fleet/w-2")
	r.write(elsewhere, "x.txt", "x\n")
	r.git(elsewhere, "add", "x.txt")
	r.git(elsewhere, "commit", "-q", "-m", "x")
	head := r.git(elsewhere, "rev-parse", "HEAD")

	wt := r.ensure("w-2")
	if wt.Path != elsewhere || wt.Created {
		t.Errorf("Ensure = %+v, want the existing worktree at %s reused", wt, elsewhere)
	}
	// Its directory deleted by hand: git forgets it, Ensure adds it again
	// for the branch, which keeps its commit.
	if err := os.RemoveAll(elsewhere); err != nil {
		t.Fatal(err)
	}
	wt = r.ensure("w-2")
	if !wt.Created || wt.NewBranch || wt.Path != filepath.Join(r.dir, "w-2") {
		t.Errorf("Ensure after the directory went = %+v, want a new worktree for the existing branch", wt)
	}
	if got := r.git(wt.Path, "rev-parse", "HEAD"); got != head {
		t.Errorf("the branch lost its commit: HEAD %s, want %s", got, head)
	}
}

func TestEnsureRefusesBadInputAndLeavesNothing(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *repo) worktree.Spec
		want  error
		says  string
	}{
		{"a missing repo", func(r *repo) worktree.Spec {
			s := r.spec("w-1")
			s.Repo = filepath.Join(r.path, "nope")
			return s
		}, worktree.ErrNoRepo, "nope"},
		{"a directory that is no repository", func(r *repo) worktree.Spec {
			s := r.spec("w-1")
			s.Repo = r.t.TempDir()
			return s
		}, worktree.ErrNoRepo, "not a git repository"},
		{"a base that does not exist", func(r *repo) worktree.Spec {
			s := r.spec("w-1")
			s.Base = "develop"
			return s
		}, worktree.ErrNoBase, `"develop"`},
		{"a base checked out with uncommitted changes", func(r *repo) worktree.Spec {
			r.write(r.path, "shared.txt", "edited, not committed\n")
			return r.spec("w-1")
		}, worktree.ErrDirtyBase, "shared.txt"},
		{"a path holding something else", func(r *repo) worktree.Spec {
			if err := os.MkdirAll(filepath.Join(r.dir, "w-1"), 0o755); err != nil {
				r.t.Fatal(err)
			}
			r.write(filepath.Join(r.dir, "w-1"), "notes.txt", "mine\n")
			return r.spec("w-1")
		}, worktree.ErrPathTaken, "w-1"},
		{"a name that is no agent id", func(r *repo) worktree.Spec { return r.spec("../w-1") }, worktree.ErrInvalidSpec, "../w-1"},
		{"a relative repo", func(r *repo) worktree.Spec {
			s := r.spec("w-1")
			s.Repo = "repo"
			return s
		}, worktree.ErrInvalidSpec, "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			_, err := worktree.Ensure(context.Background(), tt.setup(r))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Ensure: %v, want %v saying %s", err, tt.want, tt.says)
			}
			if got := r.fleetBranches(); got != "" {
				t.Errorf("branches left: %s", got)
			}
			if got := r.git(r.path, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
				t.Errorf("worktrees left:\n%s", got)
			}
			if tt.want != worktree.ErrPathTaken {
				if _, err := os.Stat(filepath.Join(r.dir, "w-1")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s/w-1 exists: %v", r.dir, err)
				}
			}
		})
	}
	t.Run("untracked files in the base are no changes", func(t *testing.T) {
		r := newRepo(t)
		r.write(r.path, "scratch.txt", "not part of any branch\n")
		if wt := r.ensure("w-1"); !wt.Created {
			t.Errorf("Ensure = %+v", wt)
		}
	})
}

// Two agents edit the same file, each in its own worktree: each change is
// on its own branch (committed or not) and neither sees the other's, nor
// does the main checkout.
func TestTwoAgentsEditTheSameFileApart(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	a, b := r.ensure("a"), r.ensure("b")
	r.write(a.Path, "shared.txt", "from a\n")
	r.git(a.Path, "commit", "-q", "-am", "a's edit")
	r.write(b.Path, "shared.txt", "from b\n")

	if got := r.git(r.path, "show", "fleet/a:shared.txt"); got != "from a" {
		t.Errorf("fleet/a:shared.txt = %q", got)
	}
	if got := r.read(filepath.Join(b.Path, "shared.txt")); got != "from b\n" {
		t.Errorf("b's shared.txt = %q", got)
	}
	if got := r.git(r.path, "show", "fleet/b:shared.txt"); got != "from main" {
		t.Errorf("fleet/b:shared.txt = %q: b's uncommitted edit leaked, or a's commit", got)
	}
	if got := r.read(filepath.Join(r.path, "shared.txt")); got != "from main\n" {
		t.Errorf("main's shared.txt = %q", got)
	}
	sa, err := worktree.Inspect(ctx, a.Path, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := (worktree.State{Branch: "fleet/a", Head: r.git(r.path, "rev-parse", "fleet/a"), Ahead: 1}); sa != want {
		t.Errorf("a: %+v, want %+v", sa, want)
	}
	sb, err := worktree.Inspect(ctx, b.Path, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := (worktree.State{Branch: "fleet/b", Head: r.git(r.path, "rev-parse", "main"), Dirty: 1}); sb != want {
		t.Errorf("b: %+v, want %+v", sb, want)
	}
	// fleetd's per-agent files (.fleet/, with its .gitignore of "*", as
	// the inbox writes it) never make a worktree dirty.
	if err := os.MkdirAll(filepath.Join(a.Path, ".fleet", "inbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	r.write(filepath.Join(a.Path, ".fleet"), ".gitignore", "*\n")
	r.write(filepath.Join(a.Path, ".fleet", "inbox"), "T1.md", "a prompt\n")
	if s, err := worktree.Inspect(ctx, a.Path, "main"); err != nil || s.Dirty != 0 {
		t.Errorf("with an inbox file: %+v %v, want clean", s, err)
	}
}

func TestRemoveKeepsWhatWouldBeLost(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		work func(r *repo, wt worktree.Worktree)
		want worktree.Removal // without State and Pushed
		kept string
	}{
		{"untouched: nothing to lose", func(*repo, worktree.Worktree) {}, worktree.Removal{Removed: true, BranchDeleted: true}, ""},
		{"uncommitted changes", func(r *repo, wt worktree.Worktree) { r.write(wt.Path, "shared.txt", "edited\n") },
			worktree.Removal{}, "1 uncommitted file"},
		{"an untracked file", func(r *repo, wt worktree.Worktree) { r.write(wt.Path, "new.txt", "new\n") },
			worktree.Removal{}, "1 uncommitted file"},
		{"a commit neither merged nor pushed", func(r *repo, wt worktree.Worktree) { r.commit(wt.Path, "one") },
			worktree.Removal{}, "1 commit neither merged into main nor pushed"},
		{"a commit merged into the base", func(r *repo, wt worktree.Worktree) {
			r.commit(wt.Path, "one")
			r.git(r.path, "merge", "-q", "--ff-only", wt.Branch)
		}, worktree.Removal{Removed: true, BranchDeleted: true}, ""},
		{"a commit pushed, not merged: the branch stays", func(r *repo, wt worktree.Worktree) {
			r.commit(wt.Path, "one")
			remote := filepath.Join(r.t.TempDir(), "remote.git")
			r.git(r.path, "init", "-q", "--bare", remote)
			r.git(r.path, "remote", "add", "origin", remote)
			r.git(wt.Path, "push", "-q", "origin", wt.Branch)
		}, worktree.Removal{Removed: true}, ""},
		{"already gone", func(r *repo, wt worktree.Worktree) { r.git(r.path, "worktree", "remove", wt.Path) },
			worktree.Removal{Removed: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			wt := r.ensure("w-1")
			tt.work(r, wt)
			got, err := worktree.Remove(ctx, wt)
			if err != nil {
				t.Fatal(err)
			}
			if got.Removed != tt.want.Removed || got.BranchDeleted != tt.want.BranchDeleted || !strings.Contains(got.Kept, tt.kept) || (tt.kept == "") != (got.Kept == "") {
				t.Errorf("Remove = %+v, want removed=%t branch deleted=%t kept %q", got, tt.want.Removed, tt.want.BranchDeleted, tt.kept)
			}
			_, statErr := os.Stat(wt.Path)
			if gone := errors.Is(statErr, os.ErrNotExist); gone != got.Removed {
				t.Errorf("the worktree's directory gone=%t, removed=%t", gone, got.Removed)
			}
			if branches := r.fleetBranches(); (branches == "") != got.BranchDeleted {
				t.Errorf("branches %q with branch deleted=%t", branches, got.BranchDeleted)
			}
		})
	}
	t.Run("a directory that is no worktree is never deleted", func(t *testing.T) {
		r := newRepo(t)
		other := t.TempDir()
		r.write(other, "precious.txt", "x\n")
		got, err := worktree.Remove(ctx, worktree.Worktree{Repo: r.path, GitDir: filepath.Join(r.path, ".git"), Path: other, Branch: "fleet/w-9", Base: "main"})
		if err != nil || got.Removed || got.Kept == "" {
			t.Errorf("Remove = %+v, %v, want kept", got, err)
		}
		if got := r.read(filepath.Join(other, "precious.txt")); got != "x\n" {
			t.Errorf("precious.txt = %q", got)
		}
	})
}

func (r *repo) commit(dir, name string) {
	r.t.Helper()
	r.write(dir, name+".txt", name+"\n")
	r.git(dir, "add", name+".txt")
	r.git(dir, "commit", "-q", "-m", name)
}

func TestUndoTakesBackOnlyWhatEnsureCreated(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	wt := r.ensure("w-1")
	if err := worktree.Undo(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !errors.Is(err, os.ErrNotExist) || r.fleetBranches() != "" {
		t.Errorf("after Undo: %v, branches %q", err, r.fleetBranches())
	}
	// A reused worktree is not Undo's to take.
	wt = r.ensure("w-2")
	r.write(wt.Path, "work.txt", "w\n")
	reused := r.ensure("w-2")
	if err := worktree.Undo(ctx, reused); err != nil {
		t.Fatal(err)
	}
	if got := r.read(filepath.Join(wt.Path, "work.txt")); got != "w\n" {
		t.Errorf("work.txt = %q", got)
	}
	// Something written into a new worktree: kept, and said.
	wt = r.ensure("w-3")
	r.write(wt.Path, "early.txt", "e\n")
	if err := worktree.Undo(ctx, wt); err == nil || !strings.Contains(err.Error(), "kept") {
		t.Errorf("Undo of a written worktree: %v, want it kept", err)
	}
	if got := r.read(filepath.Join(wt.Path, "early.txt")); got != "e\n" {
		t.Errorf("early.txt = %q", got)
	}
}

// Many spawns at once into one repository: each gets its worktree, and
// those for the same name get the same one, created once.
func TestParallelEnsures(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	const n = 8
	results := make([]worktree.Worktree, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() { results[i], errs[i] = worktree.Ensure(ctx, r.spec(fmt.Sprintf("w-%d", i%n))) })
	}
	wg.Wait()
	created := map[string]int{}
	for i, wt := range results {
		if errs[i] != nil {
			t.Fatalf("Ensure %d: %v", i, errs[i])
		}
		if wt.Path != filepath.Join(r.dir, fmt.Sprintf("w-%d", i%n)) {
			t.Errorf("Ensure %d: %s", i, wt.Path)
		}
		if wt.Created {
			created[wt.Branch]++
		}
	}
	for i := range n {
		if b := fmt.Sprintf("fleet/w-%d", i); created[b] != 1 {
			t.Errorf("%s created %d times", b, created[b])
		}
	}
}

func TestListShowsEachFleetWorktree(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	a, b := r.ensure("a"), r.ensure("b")
	r.commit(a.Path, "one")
	r.write(b.Path, "shared.txt", "edited\n")
	c := r.ensure("c")
	if err := os.RemoveAll(c.Path); err != nil {
		t.Fatal(err)
	}
	r.git(r.path, "branch", "not-fleet")
	list, err := worktree.List(ctx, r.path, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]worktree.Entry{}
	for _, e := range list {
		got[e.Name] = e
	}
	if len(list) != 3 {
		t.Fatalf("List = %+v, want a, b and c", list)
	}
	if e := got["a"]; e.Ahead != 1 || e.Dirty != 0 || e.Merged() || e.Pushed || e.Base != "main" || e.Path != a.Path {
		t.Errorf("a: %+v", e)
	}
	if e := got["b"]; e.Ahead != 0 || e.Dirty != 1 || !e.Merged() {
		t.Errorf("b: %+v", e)
	}
	if e := got["c"]; !e.Missing || e.Merged() {
		t.Errorf("c: %+v", e)
	}
}
