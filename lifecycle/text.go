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
// keys, and changes nothing else:
//
//   - ESC sequences: CSI (ESC [ … final byte, and 8-bit CSI U+009B),
//     OSC (ESC ] … BEL or ST), DCS/SOS/PM/APC (ESC P/X/^/_ … ST),
//     SS2/SS3 with the character they shift, nF (ESC, intermediates, final)
//     and two-byte Fp/Fe/Fs sequences; a lone ESC; an unterminated string
//     sequence swallows the rest of the text, as it would in a terminal;
//   - C0 controls except \n and \t; \r\n and a lone \r become \n, so
//     line structure survives while no carriage return can act as Enter;
//   - DEL and the C1 controls U+0080–U+009F, also as raw bytes in invalid
//     UTF-8; other invalid bytes are dropped too.
//
// Printable Unicode, including emoji, combining marks and text that merely
// looks like a sequence without its ESC ("[201~"), is kept. The result is
// idempotent, and the Normalization says what was changed.
func Normalize(s string) (string, events.Normalization) {
	var b strings.Builder
	var n events.Normalization
	b.Grow(len(s))
	drop := func(k int) { n.ControlSequences++; n.RemovedBytes += k }
	for i := 0; i < len(s); {
		r, w := decodeRune(s[i:])
		switch {
		case r == 0x1b:
			k := escLen(s[i:])
			drop(k)
			i += k
			continue
		case r == 0x9b: // CSI
			k := w + csiBodyLen(s[i+w:])
			drop(k)
			i += k
			continue
		case r == 0x9d: // OSC
			k := w + stringBodyLen(s[i+w:], true)
			drop(k)
			i += k
			continue
		case r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // DCS SOS PM APC
			k := w + stringBodyLen(s[i+w:], false)
			drop(k)
			i += k
			continue
		case r == 0x8e || r == 0x8f: // SS2 SS3 shift the next character
			k := w
			if i+k < len(s) {
				_, m := decodeRune(s[i+k:])
				k += m
			}
			drop(k)
			i += k
			continue
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
			drop(w)
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

// escLen returns the length of the escape sequence at the start of s, which
// begins with ESC. A lone ESC (followed by a control, non-ASCII or nothing)
// is one byte.
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
		if len(s) > 2 {
			_, m := decodeRune(s[2:])
			return 2 + m
		}
		return 2
	case c >= 0x20 && c <= 0x2f: // nF: intermediates, then a final byte
		j := 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
			j++
		}
		return j
	case c >= 0x30 && c <= 0x7e:
		return 2
	default:
		return 1
	}
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
// including its terminator: ST (ESC \ or U+009C), or BEL for OSC.
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
		}
		j += n
	}
	return len(s)
}
