package simagent

import (
	"bytes"
	"unicode/utf8"
)

// keyKind is what one decoded input event is.
type keyKind int

const (
	keyRune      keyKind = iota // a printable character typed
	keyPaste                    // a bracketed paste, whole
	keyEnter                    // CR: what the Enter key sends
	keyLF                       // LF: what a pasted newline becomes without bracketed paste
	keyBackspace                // DEL or BS
	keyDelete                   // ESC[3~
	keyLeft
	keyRight
	keyHome // ESC[H, ESC OH, ESC[1~, ESC[7~
	keyEnd  // ESC[F, ESC OF, ESC[4~, ESC[8~
	keyEsc  // a lone ESC, known only once the input went quiet
	keyCtrlA
	keyCtrlE
	keyCtrlU
	keyCtrlC
)

// key is one decoded input event: a key, a typed rune, or a whole paste.
type key struct {
	kind keyKind
	r    rune   // keyRune
	text string // keyPaste
}

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// escKeys are the escape sequences the composer acts on; any other
// complete sequence (focus reports, device attributes, arrows it has no
// use for) is dropped.
var escKeys = map[string]keyKind{
	"\x1b[D": keyLeft, "\x1b[C": keyRight, "\x1bOD": keyLeft, "\x1bOC": keyRight,
	"\x1b[H": keyHome, "\x1bOH": keyHome, "\x1b[1~": keyHome, "\x1b[7~": keyHome,
	"\x1b[F": keyEnd, "\x1bOF": keyEnd, "\x1b[4~": keyEnd, "\x1b[8~": keyEnd,
	"\x1b[3~": keyDelete,
}

// decoder turns raw terminal input into keys. Terminals write a key's
// sequence in one go but a PTY read may still split it, so an incomplete
// sequence or rune waits for the next read; a paste is one event however
// many reads it spans.
type decoder struct {
	pending []byte // an incomplete sequence or rune carried to the next read
	inPaste bool
	paste   []byte // the paste so far
}

// feed decodes one read.
func (d *decoder) feed(b []byte) []key {
	if len(d.pending) > 0 {
		b = append(d.pending, b...)
		d.pending = nil
	}
	var keys []key
	for len(b) > 0 {
		if d.inPaste {
			i := bytes.Index(b, pasteEnd)
			if i < 0 {
				// Keep back a tail that may be the start of the end marker.
				keep := 0
				for n := min(len(pasteEnd)-1, len(b)); n > 0; n-- {
					if bytes.HasPrefix(pasteEnd, b[len(b)-n:]) {
						keep = n
						break
					}
				}
				d.paste = append(d.paste, b[:len(b)-keep]...)
				d.pending = append([]byte(nil), b[len(b)-keep:]...)
				return keys
			}
			d.paste = append(d.paste, b[:i]...)
			keys = append(keys, key{kind: keyPaste, text: string(d.paste)})
			d.inPaste, d.paste = false, nil
			b = b[i+len(pasteEnd):]
			continue
		}
		switch c := b[0]; {
		case c == 0x1b:
			n, complete := escapeLen(b)
			if !complete {
				d.pending = append([]byte(nil), b...)
				return keys
			}
			seq := string(b[:n])
			b = b[n:]
			switch {
			case seq == string(pasteStart):
				d.inPaste = true
			case seq == "\x1b\x1b":
				// Esc pressed, then a sequence or another Esc: the second
				// ESC starts afresh.
				keys = append(keys, key{kind: keyEsc})
				b = append([]byte{0x1b}, b...)
			default:
				if k, ok := escKeys[seq]; ok {
					keys = append(keys, key{kind: k})
				}
			}
		case c == '\r':
			b = b[1:]
			keys = append(keys, key{kind: keyEnter})
		case c == '\n':
			b = b[1:]
			keys = append(keys, key{kind: keyLF})
		case c == 0x7f || c == 0x08:
			b = b[1:]
			keys = append(keys, key{kind: keyBackspace})
		case c < 0x20:
			b = b[1:]
			if k, ok := ctrlKeys[c]; ok {
				keys = append(keys, key{kind: k})
			}
		default:
			r, n := utf8.DecodeRune(b)
			if r == utf8.RuneError && n == 1 {
				if !utf8.FullRune(b) {
					d.pending = append([]byte(nil), b...) // a rune split across reads
					return keys
				}
				b = b[1:] // not UTF-8: dropped
				continue
			}
			b = b[n:]
			if r >= 0x80 && r < 0xa0 {
				continue // C1 controls
			}
			keys = append(keys, key{kind: keyRune, r: r})
		}
	}
	return keys
}

var ctrlKeys = map[byte]keyKind{0x01: keyCtrlA, 0x05: keyCtrlE, 0x15: keyCtrlU, 0x03: keyCtrlC}

// flush is called once input has gone quiet: an ESC still waiting for the
// rest of a sequence was the Esc key. (A paste in progress keeps waiting
// for its end marker, as a terminal's does.)
func (d *decoder) flush() []key {
	if !d.inPaste && bytes.Equal(d.pending, []byte{0x1b}) {
		d.pending = nil
		return []key{{kind: keyEsc}}
	}
	return nil
}

// escapeLen is the length of the escape sequence at the start of b, and
// whether it is complete: CSI (ESC [ … final byte), OSC (ESC ] … BEL or
// ST), SS3 (ESC O and one byte), or ESC plus one byte (Alt+key).
func escapeLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '[':
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1, true
			}
		}
		return 0, false
	case ']':
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1, true
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2, true
			}
		}
		return 0, false
	case 'O':
		if len(b) < 3 {
			return 0, false
		}
		return 3, true
	}
	return 2, true
}
