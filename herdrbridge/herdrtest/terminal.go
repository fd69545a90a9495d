package herdrtest

import (
	"bytes"
	"strings"
)

// terminal is the fake's stand-in for herdr's terminal emulator. It does
// not lay out a screen; it keeps what the program printed as a log of lines
// (the raw bytes, and a text copy with control sequences removed) and
// tracks the modes herdr's behaviour depends on: bracketed paste (DECSET
// 2004) and the OSC window title. That is enough for pane.read, for
// prompt wrapping, and for screen-rule detection on line-oriented output.
type terminal struct {
	limit int
	raw   []byte
	text  []byte

	state     parseState
	seq       []byte // CSI parameters or OSC payload being collected
	pendingCR bool

	bracketed bool
	title     string
	revision  uint64
}

type parseState int

const (
	ground parseState = iota
	escape
	escInter
	csi
	osc
	oscEsc
	strSeq // DCS, SOS, PM, APC: skipped up to ST
	strSeqEsc
)

func newTerminal(limit int) *terminal { return &terminal{limit: limit} }

// write feeds program output through the parser. Chunk boundaries do not
// matter: the parser state carries across calls.
func (t *terminal) write(b []byte) {
	t.revision++
	t.raw = capLog(append(t.raw, b...), t.limit)
	for _, c := range b {
		t.feed(c)
	}
	t.text = capLog(t.text, t.limit)
}

func (t *terminal) feed(c byte) {
	switch t.state {
	case ground:
		if t.pendingCR {
			t.pendingCR = false
			if c != '\n' {
				// A bare CR returns to the start of the line; programs
				// then overwrite it, so the log drops what was there.
				t.text = t.text[:bytes.LastIndexByte(t.text, '\n')+1]
			}
		}
		switch {
		case c == 0x1b:
			t.state = escape
		case c == '\r':
			t.pendingCR = true
		case c == '\n' || c == '\t':
			t.text = append(t.text, c)
		case c == '\b':
			if n := len(t.text); n > 0 && t.text[n-1] != '\n' {
				t.text = t.text[:n-1]
			}
		case c < 0x20 || c == 0x7f:
		default:
			t.text = append(t.text, c)
		}
	case escape:
		switch {
		case c == '[':
			t.state, t.seq = csi, t.seq[:0]
		case c == ']':
			t.state, t.seq = osc, t.seq[:0]
		case c == 'P' || c == 'X' || c == '^' || c == '_':
			t.state = strSeq
		case c >= 0x20 && c <= 0x2f:
			t.state = escInter
		default:
			t.state = ground
		}
	case escInter:
		if c < 0x20 || c > 0x2f {
			t.state = ground
		}
	case csi:
		switch {
		case c >= 0x40 && c <= 0x7e:
			t.csi(c)
			t.state = ground
		case c >= 0x20 && c <= 0x3f:
			t.seq = append(t.seq, c)
		default:
			t.state = ground
		}
	case osc:
		switch c {
		case 0x07:
			t.osc()
			t.state = ground
		case 0x1b:
			t.state = oscEsc
		default:
			if len(t.seq) < 4096 {
				t.seq = append(t.seq, c)
			}
		}
	case oscEsc:
		t.osc()
		t.state = ground
		if c != '\\' {
			t.state = escape
			t.feed(c)
		}
	case strSeq:
		if c == 0x1b {
			t.state = strSeqEsc
		}
	case strSeqEsc:
		t.state = strSeq
		if c == '\\' {
			t.state = ground
		}
	}
}

// csi handles the private modes the fake cares about: ESC[?2004h/l.
func (t *terminal) csi(final byte) {
	if (final != 'h' && final != 'l') || len(t.seq) == 0 || t.seq[0] != '?' {
		return
	}
	for _, p := range strings.Split(string(t.seq[1:]), ";") {
		if p == "2004" {
			t.bracketed = final == 'h'
		}
	}
}

// osc records the window title (OSC 0 and 2).
func (t *terminal) osc() {
	s := string(t.seq)
	if rest, ok := strings.CutPrefix(s, "0;"); ok {
		t.title = rest
	} else if rest, ok := strings.CutPrefix(s, "2;"); ok {
		t.title = rest
	}
}

// lines returns the last n lines of the text log (or of the raw log when
// ansi is set), whether older lines were left out, and all lines when n is
// 0. A trailing newline does not count as an empty last line.
func (t *terminal) lines(n int, ansi bool) ([]string, bool) {
	buf := t.text
	if ansi {
		buf = t.raw
	}
	s := strings.TrimSuffix(string(buf), "\n")
	if s == "" {
		return nil, false
	}
	all := strings.Split(s, "\n")
	if n <= 0 || n >= len(all) {
		return all, false
	}
	return all[len(all)-n:], true
}

// capLog keeps a log under limit bytes by dropping its oldest half, cut at
// a line boundary so no partial line is left at the top.
func capLog(b []byte, limit int) []byte {
	if len(b) <= limit {
		return b
	}
	cut := len(b) - limit/2
	if i := bytes.IndexByte(b[cut:], '\n'); i >= 0 {
		cut += i + 1
	}
	return append([]byte(nil), b[cut:]...)
}
