package herdrbridge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claude Code's permission dialogs, captured from the real 2.1.328 against
// fakeapi, read as what they ask and their options in order — a long
// option wrapped on a narrow screen whole — and a screen without one reads
// as none: its idle prompt box, its conversation quoting a numbered list.
func TestClaudeDialogsReadOffTheScreen(t *testing.T) {
	read := func(name string) string { return screenOf(t, "claude", name) }
	for _, c := range []struct {
		file string
		want Dialog
	}{
		{"dialog-bash", Dialog{Title: "Bash command", Detail: "remove the marker\nrm -f /tmp/cwork/marker-perm", Question: "Do you want to proceed?",
			Options: []string{"Yes", "Yes, and always allow access to /tmp/cwork from this project",
				"Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}}},
		{"dialog-write", Dialog{Title: "Create file", Detail: "notes.txt\n1 hello", Question: "Do you want to create notes.txt?",
			Options: []string{"Yes", "Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)", "No"}}},
		{"dialog-narrow", Dialog{Title: "Create file", Detail: "n2.txt\n1 x", Question: "Do you want to create n2.txt?",
			Options: []string{"Yes", "Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)", "No"}}},
	} {
		got, ok := Claude{}.ParseDialog(read(c.file))
		if !ok || !got.Same(c.want) {
			t.Errorf("%s: read %v %#v\nwant %#v", c.file, ok, got, c.want)
		}
	}
	quoted := "❯ list them\n● Here:\n 1. Yes\n 2. No\n Esc to cancel is what the dialog says\n" + strings.Repeat("\n", 3)
	for name, screen := range map[string]string{"idle-after-denial": read("idle-after-denial"), "a quoted list": quoted} {
		if d, ok := (Claude{}).ParseDialog(screen); ok {
			t.Errorf("%s: read a dialog %#v, want none", name, d)
		}
	}
}

// Only an option that refuses is a denial.
func TestWhichOptionDenies(t *testing.T) {
	for label, want := range map[string]bool{"No": true, "No, and tell Claude what to do differently": true, "no": true,
		"Yes": false, "Nothing": false, "Yes, and don't ask again": false, "Reject": true, "Allow once": false, "Rejected?": false} {
		if got := denies(label); got != want {
			t.Errorf("denies(%q) = %v, want %v", label, got, want)
		}
	}
}

// Gemini CLI's confirmations, captured from the real 0.61.0 against
// fakeapi, read as what they ask and their options; its idle screen after
// an answer reads as none.
func TestGeminiDialogsReadOffTheScreen(t *testing.T) {
	read := func(name string) string { return screenOf(t, "gemini", name) }
	for _, c := range []struct {
		file string
		want Dialog
	}{
		{"dialog-shell", Dialog{Title: "Shell touch /tmp/gwork/m1", Detail: "touch /tmp/gwork/m1", Question: "Allow execution of [Shell]?",
			Options: []string{"Allow once", "Allow for this session", "No, suggest changes (esc)"}}},
		{"dialog-write", Dialog{Title: "WriteFile Writing to notes.txt", Detail: "1 hello\n2 world", Question: "Apply this change?",
			Options: []string{"Allow once", "Allow for this session", "Modify with external editor", "No, suggest changes (esc)"}}},
	} {
		got, ok := Gemini{}.ParseDialog(read(c.file))
		if !ok || !got.Same(c.want) {
			t.Errorf("%s: read %v %#v\nwant %#v", c.file, ok, got, c.want)
		}
	}
	if d, ok := (Gemini{}).ParseDialog(read("idle-after-answer")); ok {
		t.Errorf("idle: read a dialog %#v", d)
	}
	for _, f := range []string{"dialog-shell", "dialog-write"} {
		if d, ok := (Claude{}).ParseDialog(read(f)); ok {
			t.Errorf("Claude's reader took Gemini's %s: %#v", f, d)
		}
	}
}

// After a dialog is answered No, Gemini's composer is back, empty: what
// the denial's status (idle, off the screen) waits for.
func TestGeminiComposerIsBackAfterADialog(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "gemini", "idle-after-answer.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if c := (Gemini{}).ParseComposer(string(b)); !c.Empty() {
		t.Errorf("composer %+v, want visible and empty", c)
	}
}

// Codex's approval request, captured from the real 0.169.0 against
// fakeapi (a command asking to leave its sandbox), reads as what it asks
// and its options; Claude Code's and Gemini's readers take none of it.
func TestCodexDialogsReadOffTheScreen(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "codex", "dialog-exec.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Dialog{Question: "Would you like to run the following command?",
		Detail: "Environment: local\nReason: needs to write outside\n$ touch /var/tmp/codex-outside2",
		Options: []string{"Yes, proceed (y)", "Yes, and don't ask again for commands that start with `touch /var/tmp/codex-outside2` (p)",
			"No, and tell Codex what to do differently (esc)"}}
	if got, ok := (Codex{}).ParseDialog(string(b)); !ok || !got.Same(want) {
		t.Errorf("read %v %#v\nwant %#v", ok, got, want)
	}
	for _, name := range []string{"replied", "empty-start", "draft"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "codex", name+".txt")); err == nil {
			if d, ok := (Codex{}).ParseDialog(string(b)); ok {
				t.Errorf("%s: read a dialog %#v", name, d)
			}
		}
	}
	if _, ok := (Claude{}).ParseDialog(string(b)); ok {
		t.Errorf("Claude's reader took Codex's dialog")
	}
	if _, ok := (Gemini{}).ParseDialog(string(b)); ok {
		t.Errorf("Gemini's reader took Codex's dialog")
	}
}

// OpenCode's permission request, captured from the real 1.18.33 against
// fakeapi, reads as what it asks and its options side by side, chosen by
// moving right from the first; its idle screen reads as none.
func TestOpenCodeDialogsReadOffTheScreen(t *testing.T) {
	read := func(name string) string { return screenOf(t, "opencode", name) }
	want := Dialog{Title: "Permission required", Question: "Access external directory /var/tmp", Detail: "Patterns\n- /var/tmp/*",
		Options: []string{"Allow once", "Allow always", "Reject"}}
	got, ok := (OpenCode{}).ParseDialog(read("dialog-external"))
	if !ok || !got.Same(want) {
		t.Errorf("read %v %#v\nwant %#v", ok, got, want)
	}
	for _, name := range []string{"idle-after-reply", "empty-start", "agent-dialog", "working"} {
		if d, ok := (OpenCode{}).ParseDialog(read(name)); ok {
			t.Errorf("%s: read a dialog %#v", name, d)
		}
	}
	if k := (OpenCode{}).AnswerKeys(got, 3); strings.Join(k, " ") != "right right enter" {
		t.Errorf("keys for option 3: %v", k)
	}
	if k := answerKeys(Claude{}, Dialog{}, 2); strings.Join(k, " ") != "2" {
		t.Errorf("Claude's keys for option 2: %v", k)
	}
}

// screenOf is a screen captured from kind's real CLI, in testdata.
// OpenCode's selection, shown only by colour, is read off its screen
// rendered with styles (captured from the real 1.18.33 through the fake
// herdr's ansi read, after 0, 1 and 2 Right presses by a person at the
// pane): the answer's keys move from it to the option asked for, so an
// answer chooses what was asked whatever the person did first. A screen
// without styles tells no selection, and nothing is typed then.
func TestOpenCodeAnswersMoveFromTheSelectionOnScreen(t *testing.T) {
	for i := range 3 {
		styled := screenOf(t, "opencode", fmt.Sprintf("dialog-external-styled-%d", i))
		var plain []string
		for _, r := range strings.Split(styled, "\n") {
			plain = append(plain, cellText(styledCells(r)))
		}
		d, ok := (OpenCode{}).ParseDialog(strings.Join(plain, "\n"))
		if !ok || len(d.Options) != 3 || d.Question != "Access external directory /var/tmp" {
			t.Fatalf("%d: read %v %#v", i, ok, d)
		}
		sel, ok := (OpenCode{}).Selected(styled, d)
		if !ok || sel != i+1 {
			t.Fatalf("after %d Right presses: selected %d %v, want %d", i, sel, ok, i+1)
		}
		d.Selected = sel
		want := [][]string{
			{"enter", "right enter", "right right enter"},
			{"left enter", "enter", "right enter"},
			{"left left enter", "left enter", "enter"},
		}[i]
		for option := 1; option <= 3; option++ {
			if got := strings.Join((OpenCode{}).AnswerKeys(d, option), " "); got != want[option-1] {
				t.Errorf("from %d, option %d: keys %q, want %q", sel, option, got, want[option-1])
			}
		}
		if _, ok := (OpenCode{}).Selected(strings.Join(plain, "\n"), d); ok {
			t.Errorf("%d: a selection read off a screen without styles", i)
		}
	}
}

func screenOf(t *testing.T, kind, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", kind, name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
