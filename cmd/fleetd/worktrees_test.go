package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/worktree"
	"github.com/fleetd/fleetd/worktree/worktreetest"
)

// 'fleetd worktrees' lists each fleet worktree of the roles'
// repositories with its state and its agent; --prune removes those no
// live agent works in when that loses nothing, and says why it keeps the
// others. The roster shows each agent's branch.
func TestWorktreesListsAndPrunesAgentWorktrees(t *testing.T) {
	f := fleettest.New(t)
	g := shimFor(t, f)
	g.Host = "h1"
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	worktreetest.NewRepo(t, repo)
	rolesFile := filepath.Join(root, "roles.json")
	writeJSONFile(t, rolesFile, map[string]any{"roles": map[string]any{"w-wt": map[string]any{"worktree": map[string]any{"repo": repo, "base": "main"}}, "other": map[string]any{}}})

	ctx := context.Background()
	wts := map[string]worktree.Worktree{}
	for _, name := range []string{"live", "dirty", "ahead", "done"} {
		wt, err := worktree.Ensure(ctx, worktree.Spec{Repo: repo, Base: "main", Dir: filepath.Join(root, "wt"), Name: name})
		if err != nil {
			t.Fatal(err)
		}
		wts[name] = wt
		f.MustAppend(events.Event{Subject: name, Data: events.AgentRegistered{Agent: name, Host: "h1", Pane: "p-" + name, Role: "w-wt",
			Worktree: events.Worktree{Repo: repo, Path: wt.Path, Branch: wt.Branch, Base: "main"}}})
	}
	if err := os.WriteFile(filepath.Join(wts["dirty"].Path, "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	worktreetest.Git(t, wts["ahead"].Path, "commit", "-q", "--allow-empty", "-m", "work")
	f.MustAppend(events.Event{Subject: "live", Data: events.AgentReplied{Reply: "ok", Worktree: events.Worktree{Branch: "fleet/live", Head: "abc", Ahead: 2, Dirty: 1}}})
	for _, name := range []string{"ahead", "done"} {
		f.MustAppend(events.Event{Subject: name, Data: events.AgentExited{Reason: "test"}})
	}
	ack := f.MustAppend(events.Event{Subject: "dirty", Data: events.AgentExited{Reason: "test", Worktree: events.Worktree{Path: wts["dirty"].Path, Kept: "1 uncommitted file"}}})
	if err := f.Views.WaitSeq(ctx, ack.Seq); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := (&RosterCmd{listing: listing{out: &out}}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fleet/live (2 ahead, 1 dirty)", "fleet/dirty (worktree KEPT: 1 uncommitted file)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the roster does not show %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := (&WorktreesCmd{listing: listing{JSON: true, out: &out}, Roles: rolesFile}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	var rows []worktree.Row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	got := map[string]worktree.Row{}
	for _, r := range rows {
		got[r.Name] = r
	}
	if r := got["live"]; len(rows) != 4 || r.Agent != "live" || !r.Live || !r.Merged || r.Path != wts["live"].Path || r.Role != "w-wt" {
		t.Errorf("rows %+v", rows)
	}
	if r := got["dirty"]; r.Dirty != 1 || r.Agent != "dirty" || r.Live {
		t.Errorf("dirty: %+v", r)
	}
	if r := got["ahead"]; r.Ahead != 1 || r.Merged {
		t.Errorf("ahead: %+v", r)
	}

	out.Reset()
	if err := (&WorktreesCmd{listing: listing{out: &out}, Roles: rolesFile, Prune: true}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for name, want := range map[string]string{"live": "in use", "dirty": "KEPT: 1 uncommitted file",
		"ahead": "KEPT: 1 commit neither merged into main nor pushed", "done": "removed"} {
		line := ""
		for l := range strings.Lines(table) {
			if strings.HasPrefix(l, name+" ") {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("%s: %q, want %q\n%s", name, line, want, table)
		}
		_, err := os.Stat(wts[name].Path)
		if gone := err != nil; gone != (want == "removed") {
			t.Errorf("%s: worktree gone=%t", name, gone)
		}
	}
}
