package herdrbridge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// turnID is a turn id (a ULID) made at t.
func turnID(t time.Time, n byte) string {
	return ulid.MustNew(ulid.Timestamp(t), strings.NewReader(strings.Repeat(string(rune('a'+n)), 16))).String()
}

// age sets a file's times back by d.
func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// An agent that replaces .fleet/inbox with a symlink to another directory
// gets no text written there, and the prune removes nothing there: the
// victim's files, old ones included, all survive.
func TestTheInboxFollowsNoSymlink(t *testing.T) {
	cwd, victim := t.TempDir(), t.TempDir()
	kept := []string{"notes.txt", turnID(time.Now(), 1) + ".md"}
	for _, name := range kept {
		p := filepath.Join(victim, name)
		if err := os.WriteFile(p, []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		age(t, p, 30*24*time.Hour)
	}
	if err := os.MkdirAll(filepath.Join(cwd, ".fleet"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(cwd, InboxDir)); err != nil {
		t.Fatal(err)
	}
	turn := turnID(time.Now(), 2)
	if _, _, err := writeInbox(cwd, turn, strings.Repeat("x", 40<<10), "it is long"); !errors.Is(err, ErrInboxUnsafe) {
		t.Errorf("writeInbox through a symlinked inbox = %v, want ErrInboxUnsafe", err)
	}
	entries, _ := os.ReadDir(victim)
	if len(entries) != len(kept) {
		t.Errorf("the victim directory holds %v, want only %v", entries, kept)
	}
	// The same with .fleet itself a symlink.
	cwd2 := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(cwd2, ".fleet")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := writeInbox(cwd2, turn, "text", "why"); !errors.Is(err, ErrInboxUnsafe) {
		t.Errorf("writeInbox through a symlinked .fleet = %v, want ErrInboxUnsafe", err)
	}
	if entries, _ := os.ReadDir(victim); len(entries) != len(kept) {
		t.Errorf("the victim directory holds %v, want only %v", entries, kept)
	}
	// A file where the inbox should be is refused too.
	cwd3 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd3, ".fleet"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd3, InboxDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := writeInbox(cwd3, turn, "text", "why"); !errors.Is(err, ErrInboxUnsafe) {
		t.Errorf("writeInbox with a file for the inbox = %v, want ErrInboxUnsafe", err)
	}
	if _, _, err := writeInbox("/", turn, "text", "why"); !errors.Is(err, ErrInboxUnsafe) {
		t.Errorf("writeInbox in / = %v, want ErrInboxUnsafe", err)
	}
}

// A dangling symlink at .fleet/.gitignore is left as it is: its target
// is not created.
func TestTheInboxCreatesNoSymlinksTarget(t *testing.T) {
	cwd := t.TempDir()
	target := filepath.Join(t.TempDir(), "created-by-fleetd")
	if err := os.MkdirAll(filepath.Join(cwd, ".fleet"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(cwd, ".fleet", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	file, _, err := writeInbox(cwd, turnID(time.Now(), 1), "text", "why")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling .gitignore's target exists (%v)", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "text" {
		t.Errorf("the inbox file: %q %v", b, err)
	}
	// A fresh directory gets its .gitignore.
	cwd2 := t.TempDir()
	if _, _, err := writeInbox(cwd2, turnID(time.Now(), 1), "text", "why"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cwd2, ".fleet", ".gitignore")); err != nil || !strings.Contains(string(b), "*\n") {
		t.Errorf(".gitignore: %q %v", b, err)
	}
}

// The prune removes only fleetd's own <ULID>.md files: old ones, then the
// oldest until a new file fits the caps. The agent's own files, however
// old, stay.
func TestTheInboxPrunesOnlyItsOwnFilesWithinItsCaps(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, InboxDir)
	now := time.Now()
	if _, _, err := writeInbox(cwd, turnID(now, 0), "first", "why"); err != nil {
		t.Fatal(err)
	}
	agents := []string{"notes.md", "plan.txt", "01ARZ3NDEKTSV4RRFFQ69G5FAV.txt"}
	for _, name := range agents {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("the agent's"), 0o600); err != nil {
			t.Fatal(err)
		}
		age(t, p, 30*24*time.Hour)
	}
	old := turnID(now.Add(-8*24*time.Hour), 1)
	if err := os.WriteFile(filepath.Join(dir, old+".md"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	age(t, filepath.Join(dir, old+".md"), 8*24*time.Hour)
	if _, _, err := writeInbox(cwd, turnID(now, 2), "second", "why"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, old+".md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fleetd's file older than %s was kept (%v)", inboxKeep, err)
	}
	for _, name := range agents {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the agent's %s: %v", name, err)
		}
	}
	// The count cap: fleetd's oldest files go first.
	for i := range inboxMaxFiles + 5 {
		p := filepath.Join(dir, turnID(now.Add(time.Duration(i)*time.Millisecond), 3)+".md")
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		age(t, p, time.Duration(inboxMaxFiles+5-i)*time.Second)
	}
	newest := turnID(now.Add(time.Hour), 4)
	if _, _, err := writeInbox(cwd, newest, "newest", "why"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	own := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") && e.Name() != "notes.md" {
			own++
		}
	}
	if own != inboxMaxFiles {
		t.Errorf("%d of fleetd's files after the cap, want %d", own, inboxMaxFiles)
	}
	if _, err := os.Stat(filepath.Join(dir, newest+".md")); err != nil {
		t.Errorf("the newest file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, turnID(now, 3)+".md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the oldest of fleetd's files survived the cap (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, turnID(now, 0)+".md")); err != nil {
		t.Errorf("a recent file of fleetd's went before older ones: %v", err)
	}
	for _, name := range agents {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the agent's %s after the cap: %v", name, err)
		}
	}
	if _, _, err := writeInbox(cwd, turnID(now, 5), strings.Repeat("x", inboxMaxBytes+1), "why"); err == nil {
		t.Error("a text over the bytes cap was written")
	}
}
