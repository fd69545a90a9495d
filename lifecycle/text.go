package lifecycle

import (
	"strings"
	"unicode/utf8"

	"github.com/fleetd/fleetd/events"
)

// Normalize is the one rule for a turn's text (DESIGN.md, "Text rule"):
// what fleetd types is exactly Normalize(text), and that is what every
// step of the turn is matched against. It removes everything a terminal
// would act on instead of display, so a text typed into a pane cannot move
// the cursor, retitle the window, end a bracketed paste early, or press
// keys, and changes nothing else. Every ESC and every C1 control goes; what
// goes with it is exactly one of these (docs/claude-composer.md, "Escape
// sequences"):
//
//   - CSI: ESC [ (or U+009B), parameter and intermediate bytes 0x20–0x3F,
//     one final byte 0x40–0x7E; any other byte ends it early and is text;
//   - OSC: ESC ] (or U+009D) up to BEL or ST (ESC \ or U+009C); DCS, SOS,
//     PM, APC: ESC P, X, ^, _ (or U+0090, U+0098, U+009E, U+009F) up to ST.
//     As in a terminal's parser, CAN, SUB, an ESC that is not ST and any
//     other C1 control end such a string early and are processed on their
//     own; a string never ended swallows the rest of the text;
//   - SS2, SS3: ESC N, ESC O (or U+008E, U+008F) and the one character
//     0x21–0x7E they shift (ESC O P is the F1 key);
//   - the nF sequences terminals define, and only those (nfLen): ESC #
//     3–6 or 8 (line size, alignment test), ESC % @ or G (leave or enter
//     UTF-8), and character set designations ESC ( ) * + - . / with a set's
//     final byte, which captured terminal output is full of (ESC ( B);
//   - a two-byte escape, ESC and one byte 0x30–0x7E (ESC 7, ESC c, and
//     what Alt+key sends as input).
//
// Any other ESC is removed alone. In particular ESC followed by a space is
// never a sequence: ECMA-48's "ESC SP F" family only switches how a
// terminal reports, an application reads ESC SP as Alt+Space with the next
// key its own, and a text with a stray ESC before a space and a word must
// keep the word ("lonely \x1b escape" → "lonely  escape").
//
// Besides: C0 controls except \n and \t are removed; \r\n and a lone \r
// become \n, so line structure survives while no carriage return can act
// as Enter; DEL and the C1 controls U+0080–U+009F go, also as raw bytes in
// invalid UTF-8 (a raw 0x9B is a CSI); other invalid bytes are dropped too.
//
// Printable Unicode, including emoji, combining marks and text that merely
// looks like a sequence without its ESC ("[201~"), is kept. The result is
// idempotent, and the Normalization says what was changed.
func Normalize(s string) (string, events.Normalization) {
	var b strings.Builder
	var n events.Normalization
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, w := decodeRune(s[i:])
		if k := seqLen(s[i:], r, w); k > 0 {
			n.ControlSequences++
			n.RemovedBytes += k
			i += k
			continue
		}
		switch {
		case r == '\r':
			b.WriteByte('\n')
			n.CarriageReturns++
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
				n.RemovedBytes++
			}
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == invalid:
			// other controls and undecodable bytes: drop
			n.ControlSequences++
			n.RemovedBytes += w
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String(), n
}

// NormalizeText is Normalize without the account of what changed.
func NormalizeText(s string) string {
	t, _ := Normalize(s)
	return t
}

// invalid marks a byte that is not valid UTF-8 and not a C1 control.
const invalid = -1

// decodeRune decodes one rune, mapping a raw byte 0x80–0x9F in invalid UTF-8
// to the C1 control of the same value: some terminals honour 8-bit controls,
// so a stray 0x9B must be treated as CSI, not ignored.
func decodeRune(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		if s[0] >= 0x80 && s[0] <= 0x9f {
			return rune(s[0]), 1
		}
		return invalid, 1
	}
	return r, n
}

// seqLen returns the length of the escape sequence or C1 control string
// that starts s with r (w bytes), or 0 when r starts none.
func seqLen(s string, r rune, w int) int {
	switch r {
	case 0x1b:
		return escLen(s)
	case 0x9b: // CSI
		return w + csiBodyLen(s[w:])
	case 0x9d: // OSC
		return w + stringBodyLen(s[w:], true)
	case 0x90, 0x98, 0x9e, 0x9f: // DCS SOS PM APC
		return w + stringBodyLen(s[w:], false)
	case 0x8e, 0x8f: // SS2 SS3
		return w + shiftedLen(s[w:])
	}
	return 0
}

// escLen returns the length of the escape sequence at the start of s, which
// begins with ESC; 1 for an ESC that starts none (followed by a space, a
// control, non-ASCII, an nF sequence no terminal defines, or nothing).
func escLen(s string) int {
	if len(s) < 2 {
		return 1
	}
	switch c := s[1]; {
	case c == '[':
		return 2 + csiBodyLen(s[2:])
	case c == ']':
		return 2 + stringBodyLen(s[2:], true)
	case c == 'P' || c == 'X' || c == '^' || c == '_':
		return 2 + stringBodyLen(s[2:], false)
	case c == 'N' || c == 'O':
		return 2 + shiftedLen(s[2:])
	case c >= 0x20 && c <= 0x2f:
		return 1 + nfLen(s[1:])
	case c >= 0x30 && c <= 0x7e:
		return 2
	default:
		return 1
	}
}

// shiftedLen is the length of the character SS2 or SS3 shifts: one
// graphic ASCII byte, the only kind a 94- or 96-character set maps.
func shiftedLen(s string) int {
	if len(s) > 0 && s[0] >= 0x21 && s[0] <= 0x7e {
		return 1
	}
	return 0
}

// nfLen returns the length of the nF sequence s (intermediates and final,
// the ESC before them not counted) when it is one a terminal defines, else
// 0. The finals are xterm's (ctlseqs, "Controls beginning with ESC"):
// an undefined one is a stray ESC before ordinary text, not a sequence.
func nfLen(s string) int {
	if len(s) < 2 {
		return 0
	}
	i, rest := s[0], s[1:]
	has := func(set string) bool { return strings.IndexByte(set, rest[0]) >= 0 }
	switch i {
	case '#': // DECDHL, DECSWL, DECDWL, DECALN
		if has("34568") {
			return 2
		}
	case '%': // select the default or the UTF-8 character set
		if has("@G") {
			return 2
		}
	case '(', ')', '*', '+': // designate a 94-character set to G0–G3
		if has("012<>=`ABCEHKQRYZf4569") {
			return 2
		}
		if len(rest) >= 2 {
			switch rest[:2] {
			case "%0", "%2", "%3", "%5", "%6", "%=", "\">", "\"4", "\"?", "&4", "&5":
				return 3
			}
		}
	case '-', '.', '/': // designate a 96-character set to G1–G3
		if has("ABFHLM") {
			return 2
		}
	}
	return 0
}

// csiBodyLen returns the length of a CSI body (parameters 0x30–0x3F,
// intermediates 0x20–0x2F, one final byte 0x40–0x7E). A byte outside those
// ranges aborts the sequence there, and it is then processed as text.
func csiBodyLen(s string) int {
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case c >= 0x40 && c <= 0x7e:
			return j + 1
		case c < 0x20 || c > 0x3f:
			return j
		}
	}
	return len(s)
}

// stringBodyLen returns the length of an OSC/DCS/SOS/PM/APC body up to and
// including its terminator: ST (ESC \ or U+009C), or BEL for OSC. As in a
// terminal's parser (the "anywhere" transitions of DEC's), CAN, SUB, an
// ESC that is not ST and any other C1 control abort the string: the body
// ends before them, and they are processed on their own. Without either,
// the body is the rest of s.
func stringBodyLen(s string, bel bool) int {
	for j := 0; j < len(s); {
		r, n := decodeRune(s[j:])
		switch {
		case r == 0x07 && bel:
			return j + 1
		case r == 0x9c:
			return j + n
		case r == 0x1b && j+1 < len(s) && s[j+1] == '\\':
			return j + 2
		case r == 0x18 || r == 0x1a || r == 0x1b || (r >= 0x80 && r <= 0x9f):
			return j
		}
		j += n
	}
	return len(s)
}
