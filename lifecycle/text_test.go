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
		// A stray ESC takes nothing with it unless it starts a sequence.
		{"lone ESC before a space keeps the word", "lonely \x1b escape", "lonely  escape"},
		{"doubled ESC before a space keeps the word", "lonely \x1b\x1b escape", "lonely  escape"},
		{"ESC SP F is not a sequence either", "a\x1b Fine", "a Fine"},
		{"ESC before non-ASCII drops only ESC", "a\x1bébc", "aébc"},
		{"ESC before an undefined nF drops only ESC", "a\x1b!x\x1b#9\x1b(z\x1b$B", "a!x#9(z$B"},
		{"ESC and a letter is a two-byte escape", "a\x1bxb", "ab"},
		{"line size and alignment are dropped", "a\x1b#8b\x1b#3c", "abc"},
		{"UTF-8 selection is dropped", "a\x1b%Gb\x1b%@c", "abc"},
		{"charset designations are dropped", "a\x1b)0b\x1b(%5c\x1b-Ad\x1b*\"4e", "abcde"},
		{"tput sgr0 is dropped", "\x1b(B\x1b[mtext", "text"},
		{"SS3 shifts only a graphic byte", "a\x1bO b\x1bO\nc", "a b\nc"},
		{"OSC ends at the next ESC", "\x1b]0;title\x1b[1mbold", "bold"},
		{"OSC ends at CAN", "\x1b]0;t\x18x", "x"},
		{"DCS ends at a C1 control", "\x1bPq\u009b1mx", "x"},
		{"unterminated CSI at the end is dropped", "a\x1b[12", "a"},
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

// FuzzNormalize checks Normalize against refNormalize, an independent
// reading of the rule as a terminal parser's state machine, and the
// properties the rule promises: no control survives, the account adds up,
// the result is idempotent, a printable character is removed only inside
// a sequence that starts with ESC or a C1 control, and an ESC that starts
// no sequence takes nothing else with it. Only the seeds run in go test;
// go test -fuzz=FuzzNormalize ./lifecycle/ explores.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"hello", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07x", "\x1b[200~p\x1b[201~",
		"[20[200~0~", "a\r\nb\rc", "\x9b1m\u009b2m", "\x1bP\x1b\\", "日本\x7f\x00",
		"lonely \x1b escape", "lonely \x1b\x1b escape", "\x1b\x1b[31mx", "end\x1b",
		"\x1b", "\x1b\x1b", "a\x1b]0;never ends", "a\x1b[12", "a\x1b[12\nb",
		"\x1b]0;t\x1b[1mb", "\x1b Fine", "\x1b#8\x1b#9", "\x1b(B\x1b(%5\x1b(%x",
		"\x1bO\x1bOP\x1bO ", "\x1bé", "\x8e\u008fA", "\x1b]0;\u009c\x1b_\x18x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, n := Normalize(in)
		want, toks := refNormalize(in)
		if out != want {
			t.Fatalf("Normalize(%q) = %q, the reference says %q (tokens %v)", in, out, want, toks)
		}
		for _, tk := range toks {
			span := in[tk.start:tk.end]
			if tk.kind != tokSeq && tk.kind != tokControl && tk.kind != tokLoneESC {
				continue
			}
			if tk.kind == tokLoneESC && span != "\x1b" {
				t.Fatalf("Normalize(%q): a lone ESC token is %q", in, span)
			}
			if tk.kind == tokSeq && !startsSequence(span) {
				t.Fatalf("Normalize(%q): sequence %q does not start with ESC or a C1 introducer", in, span)
			}
			if tk.kind != tokSeq && hasPrintable(span) {
				t.Fatalf("Normalize(%q): removed %q, printable but in no sequence", in, span)
			}
		}
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
		// A stray ESC (one or two) before a space, a control, non-ASCII, an
		// intermediate no sequence starts with, or the end takes nothing
		// with it: strewn through clean text, the text comes back whole.
		for _, esc := range []string{"\x1b", "\x1b\x1b"} {
			var b strings.Builder
			for _, r := range out {
				if r < 0x21 || r > 0x7e || strings.ContainsRune("!\"$&',", r) {
					b.WriteString(esc)
				}
				b.WriteRune(r)
			}
			b.WriteString(esc)
			if got := NormalizeText(b.String()); got != out {
				t.Fatalf("stray ESCs changed the text: Normalize(%q) = %q, want %q", b.String(), got, out)
			}
		}
	})
}

// startsSequence says whether s starts with ESC or a C1 control that
// introduces a sequence (as a rune or a raw byte).
func startsSequence(s string) bool {
	if s[0] == 0x1b {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		r = rune(s[0])
	}
	return strings.ContainsRune("\u009b\u009d\u0090\u0098\u009e\u009f\u008e\u008f", r)
}

// hasPrintable says whether s holds a character a terminal would display.
func hasPrintable(s string) bool {
	for _, r := range s {
		if r != utf8.RuneError && r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f) {
			return true
		}
	}
	return false
}

type tokKind int

const (
	tokKeep    tokKind = iota // kept as it is
	tokCR                     // \r or \r\n, kept as \n
	tokControl                // one control or undecodable byte, removed
	tokLoneESC                // an ESC that starts no sequence, removed alone
	tokSeq                    // an escape sequence or C1 string, removed whole
)

type tok struct {
	kind       tokKind
	start, end int
}

// refNormalize is the text rule written the way a terminal's parser
// reads input (DEC's state diagram, as vt100.net draws it): one unit at a
// time, a state per kind of sequence, a unit that cannot continue a
// sequence ending it and being read again from the ground state. It is
// deliberately not Normalize's lookahead, so the two check each other.
func refNormalize(s string) (string, []tok) {
	type unit struct {
		r          rune
		start, end int
	}
	var us []unit
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			r = -1 // undecodable
			if s[i] >= 0x80 && s[i] <= 0x9f {
				r = rune(s[i]) // a raw 8-bit C1 control
			}
		}
		us = append(us, unit{r, i, i + w})
		i += w
	}
	// The nF sequences terminals define (xterm's ctlseqs), without the ESC.
	nf := map[string]bool{"%@": true, "%G": true}
	for _, c := range "34568" {
		nf["#"+string(c)] = true
	}
	for _, g := range "()*+" {
		for _, c := range []string{"0", "1", "2", "<", ">", "=", "`", "A", "B", "C", "E", "H", "K", "Q",
			"R", "Y", "Z", "f", "4", "5", "6", "9", "%0", "%2", "%3", "%5", "%6", "%=", "\">", "\"4", "\"?", "&4", "&5"} {
			nf[string(g)+c] = true
		}
	}
	for _, g := range "-./" {
		for _, c := range "ABFHLM" {
			nf[string(g)+string(c)] = true
		}
	}
	nfPrefix := func(p string) bool {
		for k := range nf {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	const (
		ground = iota
		esc
		escInter
		csi
		osc
		str
		shift
	)
	var (
		toks  []tok
		state = ground
		begin int    // index of the unit the current sequence starts at
		inter string // an nF sequence's bytes so far
	)
	emit := func(k tokKind, from, to int) { // units [from, to)
		toks = append(toks, tok{k, us[from].start, us[to-1].end})
		state = ground
	}
	isC1 := func(r rune) bool { return r >= 0x80 && r <= 0x9f }
	for i := 0; i <= len(us); i++ {
		if i == len(us) { // the text ends inside a sequence
			switch state {
			case esc, escInter:
				emit(tokLoneESC, begin, begin+1)
				i = begin // read what followed the ESC again
				continue
			case ground:
			default:
				emit(tokSeq, begin, i)
			}
			break
		}
		r := us[i].r
		switch state {
		case ground:
			begin = i
			switch {
			case r == 0x1b:
				state = esc
			case r == 0x9b:
				state = csi
			case r == 0x9d:
				state = osc
			case r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
				state = str
			case r == 0x8e || r == 0x8f:
				state = shift
			case r == '\r':
				if i+1 < len(us) && us[i+1].r == '\n' {
					i++
				}
				emit(tokCR, begin, i+1)
			case r == '\n' || r == '\t':
				emit(tokKeep, i, i+1)
			case r < 0x20 || r == 0x7f || isC1(r) || r == -1:
				emit(tokControl, i, i+1)
			default:
				emit(tokKeep, i, i+1)
			}
		case esc:
			switch {
			case r == '[':
				state = csi
			case r == ']':
				state = osc
			case r == 'P' || r == 'X' || r == '^' || r == '_':
				state = str
			case r == 'N' || r == 'O':
				state = shift
			case r > 0x20 && r <= 0x2f && nfPrefix(string(r)):
				state, inter = escInter, string(r)
			case r >= 0x30 && r <= 0x7e:
				emit(tokSeq, begin, i+1)
			default:
				emit(tokLoneESC, begin, begin+1)
				i--
			}
		case escInter:
			switch p := inter + string(r); {
			case r < 0x80 && nf[p]:
				emit(tokSeq, begin, i+1)
			case r < 0x80 && nfPrefix(p):
				inter = p
			default:
				emit(tokLoneESC, begin, begin+1)
				i = begin
			}
		case csi:
			switch {
			case r >= 0x20 && r <= 0x3f:
			case r >= 0x40 && r <= 0x7e:
				emit(tokSeq, begin, i+1)
			default:
				emit(tokSeq, begin, i)
				i--
			}
		case osc, str:
			switch {
			case r == 0x07 && state == osc, r == 0x9c:
				emit(tokSeq, begin, i+1)
			case r == 0x1b && i+1 < len(us) && us[i+1].r == '\\':
				emit(tokSeq, begin, i+2)
				i++
			case r == 0x18 || r == 0x1a || r == 0x1b || isC1(r):
				emit(tokSeq, begin, i)
				i--
			}
		case shift:
			if r >= 0x21 && r <= 0x7e {
				emit(tokSeq, begin, i+1)
			} else {
				emit(tokSeq, begin, i)
				i--
			}
		}
	}
	var b strings.Builder
	for _, tk := range toks {
		switch tk.kind {
		case tokKeep:
			b.WriteString(s[tk.start:tk.end])
		case tokCR:
			b.WriteByte('\n')
		}
	}
	return b.String(), toks
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
