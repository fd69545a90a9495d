package simagent

import (
	"fmt"
	"testing"
)

func TestLineEditor(t *testing.T) {
	tests := []struct {
		name  string
		reads []string
		want  []string
	}{
		{"bracketed paste then a separate Enter submits", []string{"\x1b[200~hello world\x1b[201~", "\r"}, []string{"hello world"}},
		{"CR inside a paste is a newline of the text", []string{"\x1b[200~line one\rline two\x1b[201~", "\r"}, []string{"line one\nline two"}},
		{"CR in the same burst as the text does not submit", []string{"typed fast\r"}, nil},
		{"and a later Enter submits all of it", []string{"typed fast\r", "\r"}, []string{"typed fast"}},
		{"keystrokes one by one", []string{"h", "i", "\r"}, []string{"hi"}},
		{"LF submits like CR", []string{"hi", "\n"}, []string{"hi"}},
		{"a bare Enter submits nothing", []string{"\r"}, []string{""}},
		{"backspace edits", []string{"hix", "\x7f", "\r"}, []string{"hi"}},
		{"Ctrl-C clears the line", []string{"junk", "\x03", "ok", "\r"}, []string{keyInterrupt, "ok"}},
		{"paste markers split across reads", []string{"\x1b[20", "0~abc\x1b", "[201~", "\r"}, []string{"abc"}},
		{"other escape sequences are ignored", []string{"\x1b[A\x1b[?1;2c\x1b]11;rgb:0/0/0\x07a", "\r"}, []string{"a"}},
		{"a rune split across reads", []string{"caf\xc3", "\xa9", "\r"}, []string{"café"}},
		{"Enter after control input only still submits", []string{"x", "\x1b[D\r"}, []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e lineEditor
			var got []string
			for _, r := range tt.reads {
				subs, _ := e.feed([]byte(r))
				got = append(got, subs...)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
				t.Errorf("submitted %q, want %q", got, tt.want)
			}
		})
	}
}
