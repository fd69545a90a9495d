package simagent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func paste(s string) string { return "\x1b[200~" + s + "\x1b[201~" }

// The composer behaves as Claude Code 2.1.328's was measured to: one case
// per rule. Each read is followed by a quiet spell (flush), as keys typed
// one at a time are.
func TestComposer(t *testing.T) {
	long := strings.Repeat("x", 801)
	tests := []struct {
		name    string
		reads   []string
		want    []string // events, in order
		text    string   // the composer afterwards
		bash    bool
		overlay overlay
	}{
		// Bracketed paste.
		{"a paste is inserted at the cursor", []string{"ab", "\x1b[D", paste("XY")}, nil, "aXYb", false, overlayNone},
		{"a paste then a separate Enter submits", []string{paste("hello world"), "\r"}, []string{`submit "hello world"`}, "", false, overlayNone},
		{"a tab in a paste becomes four spaces", []string{paste("a\tb")}, nil, "a    b", false, overlayNone},
		{"format characters in a paste are dropped", []string{paste("a\u200bb\u200c\u200d\u200e\u200f\u2060\ufeff\u00adc")}, nil, "abc", false, overlayNone},
		{"line and paragraph separators in a paste are newlines", []string{paste("a\u2028b\u2029c")}, nil, "a\nb\nc", false, overlayNone},
		{"CR and CRLF in a paste are newlines", []string{paste("a\rb\r\nc")}, nil, "a\nb\nc", false, overlayNone},
		{"a paste of 800 UTF-16 units is text", []string{paste(strings.Repeat("x", 800))}, nil, strings.Repeat("x", 800), false, overlayNone},
		{"a paste of 800 UTF-16 units in astral runes is text", []string{paste(strings.Repeat("😀", 400))}, nil, strings.Repeat("😀", 400), false, overlayNone},
		{"a paste over 800 UTF-16 units is a placeholder", []string{paste(strings.Repeat("😀", 401))}, nil, "[Pasted text #1 +0 lines]", false, overlayNone},
		{"a paste with two newlines is text", []string{paste("a\nb\nc")}, nil, "a\nb\nc", false, overlayNone},
		{"a paste with three newlines is a placeholder", []string{paste("a\nb\nc\nd")}, nil, "[Pasted text #1 +3 lines]", false, overlayNone},
		{"a placeholder expands on submit", []string{"see ", paste("a\nb\nc\nd"), "\r"},
			[]string{`submit "see \n\n<pasted_content id=\"abcd\">\na\nb\nc\nd\n</pasted_content id=\"abcd\">\n"`}, "", false, overlayNone},
		{"placeholders are numbered through the session", []string{paste(long), "\x03", paste(long), " and ", paste("1\n2\n3\n4")},
			nil, "[Pasted text #2 +0 lines] and [Pasted text #3 +3 lines]", false, overlayNone},
		{"pastes in one read are separate", []string{paste("a\nb\n") + paste("c\nd\n")}, nil, "a\nb\nc\nd\n", false, overlayNone},
		{"a paste is not a key: a pasted ? is text", []string{paste("?")}, nil, "?", false, overlayNone},
		{"a pasted newline does not submit", []string{paste("line one\nline two")}, nil, "line one\nline two", false, overlayNone},

		// Bash mode.
		{"a paste starting with ! into an empty prompt is bash mode", []string{paste("!ls -l")}, nil, "ls -l", true, overlayNone},
		{"a typed ! into an empty prompt is bash mode", []string{"!"}, nil, "", true, overlayNone},
		{"keys typed without bracketed paste run a command", []string{"!touch x\r"}, []string{`bash "touch x"`}, "", false, overlayNone},
		{"a ! into a non-empty prompt is text", []string{"a", paste("!b"), "!"}, nil, "a!b!", false, overlayNone},
		{"a second ! in bash mode is text", []string{"!", "!"}, nil, "!", true, overlayNone},
		{"removing the text before a ! does not switch modes", []string{"x!ls", "\x1b[H", "\x1b[3~"}, nil, "!ls", false, overlayNone},
		{"and it submits as a prompt", []string{"x!ls", "\x1b[H", "\x1b[3~", "\r"}, []string{`submit "!ls"`}, "", false, overlayNone},
		{"backspace on an empty bash prompt returns to prompt mode", []string{"!", "\x7f"}, nil, "", false, overlayNone},
		{"backspace in bash mode with text only edits", []string{"!ab", "\x7f"}, nil, "a", true, overlayNone},
		{"a bash submit returns to prompt mode", []string{paste("!echo hi"), "\r"}, []string{`bash "echo hi"`}, "", false, overlayNone},
		{"an empty bash submit stays in bash mode", []string{"!", "\r"}, nil, "", true, overlayNone},

		// The shortcuts overlay.
		{"a typed ? into an empty prompt opens the shortcuts", []string{"?"}, nil, "", false, overlayShortcuts},
		{"the shortcuts take the keys", []string{"?", "hello\r"}, nil, "", false, overlayShortcuts},
		{"Esc closes the shortcuts", []string{"?", "\x1b", "ok"}, nil, "ok", false, overlayNone},
		{"a typed ? into a non-empty prompt is text", []string{"why?"}, nil, "why?", false, overlayNone},

		// Keys.
		{"typed text goes in at the cursor", []string{"ac", "\x1b[D", "b"}, nil, "abc", false, overlayNone},
		{"Enter after a backslash is a newline", []string{"a\\", "\r", "b"}, nil, "a\nb", false, overlayNone},
		{"Enter after a backslash mid-text is a newline there", []string{"a\\b", "\x1b[D", "\r"}, nil, "a\nb", false, overlayNone},
		{"a raw LF submits: a paste without bracketed paste runs early", []string{"hello\nworld"}, []string{`submit "hello"`}, "world", false, overlayNone},
		{"CR typed right after text submits", []string{"typed fast\r"}, []string{`submit "typed fast"`}, "", false, overlayNone},
		{"Home goes to the start of the line", []string{paste("ab\ncd"), "\x1b[H", "X"}, nil, "ab\nXcd", false, overlayNone},
		{"ESC O H is Home too", []string{"cd", "\x1bOH", "X"}, nil, "Xcd", false, overlayNone},
		{"ctrl+a is Home", []string{"cd", "\x01", "X"}, nil, "Xcd", false, overlayNone},
		{"End goes to the end of the line", []string{paste("ab\ncd"), "\x1b[D\x1b[D\x1b[D\x1b[D", "\x1b[F", "X"}, nil, "abX\ncd", false, overlayNone},
		{"ESC O F is End too", []string{"ab", "\x1b[H", "\x1bOF", "X"}, nil, "abX", false, overlayNone},
		{"ctrl+e is End", []string{"ab", "\x01", "\x05", "X"}, nil, "abX", false, overlayNone},
		{"Right moves forward", []string{"ab", "\x01", "\x1b[C", "X"}, nil, "aXb", false, overlayNone},
		{"Delete removes the character at the cursor", []string{"abc", "\x1b[D\x1b[D", "\x1b[3~"}, nil, "ac", false, overlayNone},
		{"Backspace removes the character before the cursor", []string{"abc", "\x1b[D", "\x7f"}, nil, "ac", false, overlayNone},
		{"BS is Backspace too", []string{"abc", "\x08"}, nil, "ab", false, overlayNone},
		{"ctrl+u deletes to the start of the line", []string{paste("ab\ncdef"), "\x1b[D", "\x15"}, nil, "ab\nf", false, overlayNone},
		{"ctrl+c with text clears the composer", []string{"junk", "\x03"}, nil, "", false, overlayNone},
		{"ctrl+c on an empty composer interrupts", []string{"\x03"}, []string{"interrupt"}, "", false, overlayNone},
		{"one Esc with text does nothing", []string{"ab", "\x1b"}, nil, "ab", false, overlayNone},
		{"Esc twice clears the text", []string{"ab", "\x1b", "\x1b"}, nil, "", false, overlayNone},
		{"Esc, a key, Esc clears nothing", []string{"ab", "\x1b", "c", "\x1b"}, nil, "abc", false, overlayNone},
		{"Esc twice in bash mode clears the text, not the mode", []string{"!ls", "\x1b", "\x1b"}, nil, "", true, overlayNone},
		{"Esc on an empty bash prompt returns to prompt mode", []string{"!", "\x1b"}, nil, "", false, overlayNone},
		{"Esc twice on an empty prompt opens the rewind selector", []string{"\x1b", "\x1b"}, nil, "", false, overlayRewind},
		{"Esc closes the rewind selector", []string{"\x1b", "\x1b", "\x1b", "ok"}, nil, "ok", false, overlayNone},

		// Submit.
		{"trailing white space is trimmed as JavaScript trimEnd does", []string{paste("hi \t\u00a0\u3000\u2003"), "\r"}, []string{`submit "hi"`}, "", false, overlayNone},
		{"leading white space is kept", []string{paste("  hi"), "\r"}, []string{`submit "  hi"`}, "", false, overlayNone},
		{"an empty Enter submits nothing", []string{"\r"}, nil, "", false, overlayNone},
		{"white space alone submits nothing", []string{"   ", "\r"}, nil, "   ", false, overlayNone},
		{"prompts typed in a row are all submitted", []string{paste("one"), "\r", paste("two"), "\r"}, []string{`submit "one"`, `submit "two"`}, "", false, overlayNone},

		// Decoding.
		{"paste markers split across reads", []string{"\x1b[20", "0~abc\x1b", "[201~", "\r"}, []string{`submit "abc"`}, "", false, overlayNone},
		{"a rune split across reads", []string{"caf\xc3", "\xa9", "\r"}, []string{`submit "café"`}, "", false, overlayNone},
		{"other escape sequences are ignored", []string{"\x1b[A\x1b[?1;2c\x1b]11;rgb:0/0/0\x07\x1b[Ia", "\r"}, []string{`submit "a"`}, "", false, overlayNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := composer{newID: func() string { return "abcd" }}
			var got []string
			for _, r := range tt.reads {
				for _, ev := range append(c.feed([]byte(r)), c.flush()...) {
					got = append(got, ev.String())
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events %q, want %q", got, tt.want)
			}
			if c.String() != tt.text || c.bash != tt.bash || c.overlay != tt.overlay {
				t.Errorf("composer %q bash=%v overlay=%d, want %q bash=%v overlay=%d",
					c.String(), c.bash, c.overlay, tt.text, tt.bash, tt.overlay)
			}
		})
	}
}

// A permission dialog takes the keys: Enter (or 1) answers it, and what
// was typed before it opened is still there afterwards.
func TestComposerPermissionDialog(t *testing.T) {
	c := composer{}
	c.feed([]byte("draft"))
	c.overlay = overlayPermission
	if evs := c.feed([]byte("xyz")); len(evs) != 0 || c.String() != "draft" {
		t.Fatalf("typing into the dialog: events %v, composer %q", evs, c.String())
	}
	evs := c.feed([]byte("\r"))
	if fmt.Sprint(evs) != "[confirm]" || c.overlay != overlayNone || c.String() != "draft" {
		t.Errorf("Enter on the dialog: events %v, overlay %d, composer %q", evs, c.overlay, c.String())
	}
	for keys, want := range map[string]string{"1": "[confirm]", "2": "[confirm]", "3": "[deny]", "\x1b": "[deny]"} {
		c.overlay = overlayPermission
		evs := c.feed([]byte(keys))
		if len(evs) == 0 && keys == "\x1b" {
			evs = c.flush() // a lone Esc waits to be told from an escape sequence
		}
		if got := fmt.Sprint(evs); got != want || c.overlay != overlayNone {
			t.Errorf("%q on the dialog: events %s, overlay %d, want %s and the dialog gone", keys, got, c.overlay, want)
		}
	}
}

// A value is a slash command only when the name is letters, digits, ":",
// "_" or "-" up to white space or the end; a path is a prompt.
func TestSlashCommand(t *testing.T) {
	tests := []struct {
		value string
		name  string
		ok    bool
	}{
		{"/clear", "clear", true},
		{"/compact keep the plan", "compact", true},
		{"/exit\n", "exit", true},
		{"/help\u00a0me", "help", true},
		{"/plugin:do_it-now", "plugin:do_it-now", true},
		{"/nonsense", "nonsense", true},
		{"/tmp/foo.go is broken", "", false},
		{"/foo.go", "", false},
		{"/", "add-dir", true},
		{"/ hello", "", true},
		{"  /", "", false},
		{" /clear", "clear", true},
		{"\n/help me", "help", true},
		{"clear", "", false},
	}
	for _, tt := range tests {
		name, ok := slashCommand(tt.value)
		if name != tt.name || ok != tt.ok {
			t.Errorf("slashCommand(%q) = %q, %v; want %q, %v", tt.value, name, ok, tt.name, tt.ok)
		}
	}
}

// The box is a rule, the prompt line ("❯", a no-break space, the text),
// continuation lines indented, a rule and the footer; bash mode changes
// the prompt character and the footer; a tall text shows its last
// maxBoxRows rows under a rule that counts the others.
func TestComposerRows(t *testing.T) {
	rule := strings.Repeat("─", 10)
	tests := []struct {
		name  string
		reads []string
		want  []string
	}{
		{"empty", nil, []string{rule, "❯\u00a0", rule, promptFooter}},
		{"multi-line", []string{paste("one\ntwo")}, []string{rule, "❯\u00a0one", "  two", rule, promptFooter}},
		{"bash mode", []string{"!ls"}, []string{rule, "!\u00a0ls", rule, bashFooter}},
		{"a tall text shows its last rows", []string{"0", paste("\n1\n2"), paste("\n3\n4"), paste("\n5\n6"), paste("\n7\n8"), paste("\n9")},
			[]string{"─── ↑ 2 more ───", "  2", "  3", "  4", "  5", "  6", "  7", "  8", "  9", rule, promptFooter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c composer
			for _, r := range tt.reads {
				c.feed([]byte(r))
			}
			if got := c.rows(10); !slices.Equal(got, tt.want) {
				t.Errorf("rows %q, want %q", got, tt.want)
			}
		})
	}
}

// The screen redraws only the box, in place: back to its top, clear to the
// end, draw; a box that did not change is not redrawn.
func TestScreenRedrawsTheBoxInPlace(t *testing.T) {
	var out strings.Builder
	rows := []string{"a", "b", "c"}
	s := screen{out: &out, width: func() int { return 80 }, box: func(int) []string { return rows }}
	s.above("banner")
	s.show()
	s.refresh()
	rows = []string{"a", "B", "c"}
	s.refresh()
	s.above("done")
	want := "banner\r\n" + "a\r\nb\r\nc" + "\r\x1b[2A\x1b[Ja\r\nB\r\nc" + "\r\x1b[2A\x1b[Jdone\r\na\r\nB\r\nc"
	if out.String() != want {
		t.Errorf("screen wrote %q, want %q", out.String(), want)
	}
}

// What was submitted is shown in the history as the composer showed it: a
// long paste as its placeholder, while the value carries the paste.
func TestComposerSubmitKeepsWhatWasShown(t *testing.T) {
	c := composer{newID: func() string { return "abcd" }}
	evs := c.feed([]byte(paste("1\n2\n3\n4") + "\r"))
	if len(evs) != 1 || evs[0].shown != "[Pasted text #1 +3 lines]" || !strings.Contains(evs[0].value, "<pasted_content id=\"abcd\">\n1\n2\n3\n4\n") {
		t.Errorf("submitted %+v, want the placeholder shown and the paste in the value", evs)
	}
}

// Printed text cannot move the cursor: escape sequences and controls in a
// prompt or a command's output are dropped before they reach the screen.
func TestVisibleDropsControls(t *testing.T) {
	got := visible("red \x1b[31mtext\x1b[0m\r\nnext\tcol\x07\u0085 ok\x1b[")
	if want := "red text\nnext    col ok"; got != want {
		t.Errorf("visible = %q, want %q", got, want)
	}
}

// A slow paste (Config.PasteLag) is unseen until it lands; an Enter that
// arrives first joins it as a newline and submits nothing, one after it
// submits the whole text, and keys typed meanwhile act after the paste.
func TestSlowPaste(t *testing.T) {
	tests := []struct {
		name  string
		steps []string // reads; "LAND" lands what is held
		want  []string
		text  string
	}{
		{"unseen until it lands", []string{paste("a\nb")}, nil, ""},
		{"shown once it lands", []string{paste("a\nb"), "LAND"}, nil, "a\nb"},
		{"an Enter after it landed submits it", []string{paste("a\nb"), "LAND", "\r"}, []string{`submit "a\nb"`}, ""},
		{"an Enter before it landed joins it as a newline", []string{paste("a\nb"), "\r", "LAND"}, nil, "a\nb\n"},
		{"also in the same read", []string{paste("a\nb") + "\r", "LAND"}, nil, "a\nb\n"},
		{"pastes in a row land together, in order", []string{paste("ab"), paste("cd"), "LAND"}, nil, "abcd"},
		{"keys meanwhile act after it", []string{paste(" !"), "\x1b[D\x7f\x1b[C", paste("ls"), "LAND"}, nil, "!ls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &composer{slowPaste: true}
			var got []string
			for _, s := range tt.steps {
				evs := c.land
				if s != "LAND" {
					evs = func() []inputEvent { return c.feed([]byte(s)) }
				}
				for _, ev := range evs() {
					got = append(got, ev.String())
				}
			}
			if !slices.Equal(got, tt.want) || c.String() != tt.text {
				t.Errorf("events %q, text %q; want %q, %q", got, c.String(), tt.want, tt.text)
			}
		})
	}
}
