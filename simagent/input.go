package simagent

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// lineEditor turns raw terminal input into submitted prompts.
type lineEditor struct {
	text    []rune
	inPaste bool
	esc     []byte // an escape sequence split across reads
}

// Key events the editor reports besides text.
const (
	keyInterrupt = "\x03"
)

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// feed consumes one read's bytes. It returns the prompts submitted by it
// (an Enter with no text submits ""), and the text to echo.
func (e *lineEditor) feed(b []byte) (submits []string, echo string) {
	if len(e.esc) > 0 {
		b = append(e.esc, b...)
		e.esc = nil
	}
	var out strings.Builder
	textInRead := false
	for len(b) > 0 {
		switch c := b[0]; {
		case c == 0x1b:
			n, complete := escapeLen(b)
			if !complete {
				e.esc = append([]byte(nil), b...)
				return submits, out.String()
			}
			switch seq := b[:n]; {
			case bytes.Equal(seq, pasteStart):
				e.inPaste = true
			case bytes.Equal(seq, pasteEnd):
				e.inPaste = false
			}
			b = b[n:]
		case c == '\r' || c == '\n':
			b = b[1:]
			if e.inPaste || textInRead {
				if c == '\n' && len(e.text) > 0 && e.text[len(e.text)-1] == '\n' && !e.inPaste {
					continue // a CRLF burst: one newline
				}
				e.text = append(e.text, '\n')
				out.WriteString("\r\n")
				continue
			}
			submits = append(submits, strings.TrimSpace(string(e.text)))
			e.text = e.text[:0]
		case c == 0x7f || c == 0x08:
			b = b[1:]
			if len(e.text) > 0 {
				e.text = e.text[:len(e.text)-1]
				out.WriteString("\b \b")
			}
		case c == 0x03:
			b = b[1:]
			e.text = e.text[:0]
			submits = append(submits, keyInterrupt)
		case c < 0x20 && c != '\t':
			b = b[1:]
		default:
			r, n := utf8.DecodeRune(b)
			if r == utf8.RuneError && n == 1 && !utf8.FullRune(b) {
				e.esc = append([]byte(nil), b...) // a rune split across reads
				return submits, out.String()
			}
			b = b[n:]
			e.text = append(e.text, r)
			out.WriteRune(r)
			textInRead = true
		}
	}
	return submits, out.String()
}

// escapeLen is the length of the escape sequence at the start of b, and
// whether it is complete: CSI (ESC [ … final byte), OSC (ESC ] … BEL or
// ST), or ESC plus one byte.
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
	}
	return 2, true
}
