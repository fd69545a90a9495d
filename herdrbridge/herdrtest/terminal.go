package herdrtest

import (
	"bytes"
	"io"
	"strings"

	"github.com/charmbracelet/x/vt"
)

// scrollbackLines bounds the emulator's history: pane.read never returns
// more than 1000 rows, so older ones could never be read.
const scrollbackLines = 1000

// terminal is the fake's terminal emulator, as herdr runs one per pane.
// Every byte the program writes goes three ways: into a raw log (the
// Output test hook), into a vt emulator of the pane's size (the screen
// pane.read and detection look at, so a TUI that redraws with cursor
// movement reads as it looks) and through a small tracker of the modes
// herdr's behaviour depends on. The tracker stays separate from the
// emulator because vt drops an OSC title containing ';', which herdr
// keeps.
//
// The emulator answers terminal queries (DA1, DSR, DECRQM…) on its input
// pipe, synchronously inside write; the pane drains that pipe (see
// drainAnswers) so write never blocks.
type terminal struct {
	limit int
	raw   []byte
	emu   *vt.Emulator

	state parseState
	seq   []byte // CSI parameters or OSC payload being collected

	bracketed bool
	title     string
	revision  uint64

	heldESC bool // an ESC whose sequence is not known yet
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

func newTerminal(cols, rows, limit int) *terminal {
	emu := vt.NewEmulator(cols, rows)
	emu.SetScrollbackSize(scrollbackLines)
	return &terminal{limit: limit, emu: emu}
}

// write feeds program output to the raw log, the mode tracker and the
// emulator. Chunk boundaries do not matter: both parsers carry their state
// across calls.
func (t *terminal) write(b []byte) {
	t.revision++
	t.raw = capLog(append(t.raw, b...), t.limit)
	screen := make([]byte, 0, len(b))
	for _, c := range b {
		prev := t.state
		t.feed(c)
		screen = t.toScreen(screen, prev, c)
	}
	t.emu.Write(screen) // never fails before closeAnswers, and then output is over
}

// toScreen appends what of byte c (read in state prev) the emulator gets.
// OSC strings and DCS/SOS/PM/APC strings never reach it: the tracker has
// what they say (the title), and vt v0.1.0 ends an OSC at any 0x9C byte —
// inside the UTF-8 of "✳ Claude Code", Claude Code's idle title — and would
// print the rest onto the screen. An ESC is held until the next byte says
// whether it starts such a string.
func (t *terminal) toScreen(out []byte, prev parseState, c byte) []byte {
	str := func(s parseState) bool { return s == osc || s == oscEsc || s == strSeq || s == strSeqEsc }
	switch {
	case prev == ground && c == 0x1b:
		t.heldESC = true
		return out
	case prev == escape || prev == oscEsc && c != '\\':
		held := t.heldESC || prev == oscEsc
		t.heldESC = false
		if str(t.state) {
			return out
		}
		if held {
			out = append(out, 0x1b)
		}
		return append(out, c)
	case str(prev):
		return out
	}
	return append(out, c)
}

// answers is the emulator's input pipe: its replies to terminal queries,
// for the PTY.
func (t *terminal) answers() io.Reader { return t.emu }

// closeAnswers ends the answer pipe, so its reader sees EOF. It closes the
// pipe's writer rather than calling Emulator.Close, which sets a flag that
// Read checks without synchronisation.
func (t *terminal) closeAnswers() {
	if c, ok := t.emu.InputPipe().(io.Closer); ok {
		c.Close()
	}
}

// feed tracks modes and the title; text itself is the emulator's business.
func (t *terminal) feed(c byte) {
	switch t.state {
	case ground:
		if c == 0x1b {
			t.state = escape
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

// screen returns the rows of the screen the program currently shows (the
// alternate screen while it is active), one string per row with trailing
// spaces trimmed, or with their styles as ANSI sequences when ansi is set.
func (t *terminal) screen(ansi bool) []string {
	s := t.emu.String()
	if ansi {
		s = t.emu.Render()
	}
	rows := strings.Split(s, "\n")
	for i, r := range rows {
		rows[i] = strings.TrimRight(r, " ")
	}
	return rows
}

// history returns the scrollback, oldest first, followed by the screen.
// The alternate screen has no history, as in a real terminal: what a
// full-screen program scrolled away is gone.
func (t *terminal) history(ansi bool) []string {
	var rows []string
	if sb := t.emu.Scrollback(); sb != nil && !t.emu.IsAltScreen() {
		for _, l := range sb.Lines() {
			r := l.String()
			if ansi {
				r = l.Render()
			}
			rows = append(rows, strings.TrimRight(r, " "))
		}
	}
	return append(rows, t.screen(ansi)...)
}

// last keeps the last n rows (all of them when n ≤ 0) and reports whether
// any were left out.
func last(rows []string, n int) ([]string, bool) {
	if n <= 0 || n >= len(rows) {
		return rows, false
	}
	return rows[len(rows)-n:], true
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
