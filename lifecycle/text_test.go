package lifecycle

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fleetd/fleetd/events"
)

func TestNormalizeRemovesWhatATerminalWouldActOn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text is kept", "hello, world", "hello, world"},
		{"unicode is kept", "naïve 日本語 ❯ 🚀 e\u0301", "naïve 日本語 ❯ 🚀 e\u0301"},
		{"newline and tab are kept", "a\n\tb", "a\n\tb"},
		{"crlf becomes lf", "a\r\nb", "a\nb"},
		{"lone cr becomes lf", "a\rb", "a\nb"},
		{"cr cr lf becomes two lf", "a\r\r\nb", "a\n\nb"},
		{"C0 controls are dropped", "a\x00b\x03c\x07d\x08e\x1ff", "abcdef"},
		{"DEL is dropped", "a\x7fb", "ab"},
		{"SGR colour is dropped", "\x1b[1;31mred\x1b[0m", "red"},
		{"cursor movement is dropped", "a\x1b[2Ab\x1b[10;20Hc", "abc"},
		{"private mode CSI is dropped", "\x1b[?2004hx\x1b[?25l", "x"},
		{"CSI with intermediates is dropped", "a\x1b[1 qb", "ab"},
		{"8-bit CSI rune is dropped", "a\u009b31mb", "ab"},
		{"8-bit CSI raw byte is dropped", "a\x9b31mb", "ab"},
		{"OSC title with BEL is dropped", "\x1b]0;evil title\x07text", "text"},
		{"OSC with ST is dropped", "\x1b]2;t\x1b\\text", "text"},
		{"OSC 52 clipboard write is dropped", "\x1b]52;c;ZXZpbA==\x07ok", "ok"},
		{"8-bit OSC with 8-bit ST is dropped", "a\u009d0;t\u009cb", "ab"},
		{"DCS is dropped", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"APC is dropped", "a\x1b_Gf=24;AAAA\x1b\\b", "ab"},
		{"PM and SOS are dropped", "a\x1b^pm\x1b\\b\x1bXsos\x1b\\c", "abc"},
		{"unterminated OSC swallows the rest", "a\x1b]0;never ends", "a"},
		{"SS3 key is dropped", "a\x1bOPb", "ab"},
		{"charset selection is dropped", "a\x1b(Bb", "ab"},
		{"two-byte escapes are dropped", "a\x1b7b\x1b8c\x1bcd\x1b=e", "abcde"},
		{"lone ESC at end is dropped", "abc\x1b", "abc"},
		{"ESC before newline drops only ESC", "a\x1b\nb", "a\nb"},
		{"aborted CSI keeps the next line", "a\x1b[12\nb", "a\nb"},
		{"C1 runes are dropped", "a\u0085b\u0080c\u0084d", "abcd"},
		{"8-bit APC swallows to ST", "a\u009fcmd\u009cb", "ab"},
		{"invalid UTF-8 is dropped", "a\xffb\xc0c", "abc"},
		{"bracketed paste markers are dropped", "\x1b[200~pasted\x1b[201~", "pasted"},
		{"paste end injection is dropped", "hi\x1b[201~\rrm -rf /\r", "hi\nrm -rf /\n"},
		// Without their ESC these are text: nothing else is changed.
		{"marker text without ESC is kept", "[200~x[201~", "[200~x[201~"},
		{"other bracket text is kept", "[2000~] [20~] a[b]", "[2000~] [20~] a[b]"},
		{"empty string", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NormalizeText(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"hello", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07x", "\x1b[200~p\x1b[201~",
		"[20[200~0~", "a\r\nb\rc", "\x9b1m\u009b2m", "\x1bP\x1b\\", "日本\x7f\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, n := Normalize(in)
		for i := 0; i < len(out); i++ {
			c := out[i]
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Fatalf("Normalize(%q) = %q: control byte %#x at %d", in, out, c, i)
			}
		}
		if !utf8.ValidString(out) {
			t.Fatalf("Normalize(%q) = %q: invalid UTF-8", in, out)
		}
		for _, r := range out {
			if r >= 0x80 && r <= 0x9f {
				t.Fatalf("Normalize(%q) = %q: C1 control %U", in, out, r)
			}
		}
		if strings.Contains(out, "\x1b[201~") {
			t.Fatalf("Normalize(%q) = %q: bracketed paste end survived", in, out)
		}
		if got := len(in) - len(out); got != n.RemovedBytes {
			t.Fatalf("Normalize(%q) = %q: removed %d bytes, the account says %+v", in, out, got, n)
		}
		if again, n2 := Normalize(out); again != out || n2.Changed() {
			t.Fatalf("Normalize is not idempotent on %q: %q then %q (%+v)", in, out, again, n2)
		}
	})
}

func TestNormalizeCountsWhatItChanged(t *testing.T) {
	got, n := Normalize("\x1b[31mred\x1b[0m\r\nnext\rline\x03")
	if got != "red\nnext\nline" {
		t.Fatalf("text %q", got)
	}
	want := events.Normalization{ControlSequences: 3, CarriageReturns: 2, RemovedBytes: 5 + 4 + 1 + 1}
	if n != want {
		t.Errorf("normalization %+v, want %+v", n, want)
	}
	if _, n := Normalize("plain\ttext\n"); n.Changed() {
		t.Errorf("plain text reported changed: %+v", n)
	}
}
