package herdrbridge

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// cell is one character of a screen row read with its styles, and the
// colours it is drawn in ("" for the terminal's default), reverse video
// already applied.
type cell struct {
	r      rune
	fg, bg string
}

// styledCells reads a row as herdr renders it with format ansi: text and
// SGR sequences (other escape sequences are skipped). Colours are named
// the same whether set as foreground or background ("rgb:r,g,b",
// "idx:n"), so a foreground can be compared with a background.
func styledCells(row string) []cell {
	var out []cell
	var fg, bg string
	reverse := false
	for i := 0; i < len(row); {
		if row[i] != 0x1b {
			r, n := utf8.DecodeRuneInString(row[i:])
			c := cell{r: r, fg: fg, bg: bg}
			if reverse {
				c.fg, c.bg = bg, fg
			}
			out = append(out, c)
			i += n
			continue
		}
		seq, final, n := escapeAt(row[i:])
		i += n
		if final != 'm' {
			continue
		}
		params := strings.FieldsFunc(seq, func(r rune) bool { return r == ';' || r == ':' })
		if len(params) == 0 {
			params = []string{"0"}
		}
		for j := 0; j < len(params); j++ {
			p, _ := strconv.Atoi(params[j])
			switch {
			case p == 0:
				fg, bg, reverse = "", "", false
			case p == 7:
				reverse = true
			case p == 27:
				reverse = false
			case p >= 30 && p <= 37:
				fg = "idx:" + strconv.Itoa(p-30)
			case p >= 90 && p <= 97:
				fg = "idx:" + strconv.Itoa(p-90+8)
			case p == 39:
				fg = ""
			case p >= 40 && p <= 47:
				bg = "idx:" + strconv.Itoa(p-40)
			case p >= 100 && p <= 107:
				bg = "idx:" + strconv.Itoa(p-100+8)
			case p == 49:
				bg = ""
			case p == 38 || p == 48:
				c, used := extendedColour(params[j+1:])
				j += used
				if p == 38 {
					fg = c
				} else {
					bg = c
				}
			}
		}
	}
	return out
}

// extendedColour reads the parameters after a 38 or 48: "5;n" or
// "2;r;g;b". It returns the colour and how many parameters it used.
func extendedColour(ps []string) (string, int) {
	switch {
	case len(ps) >= 2 && ps[0] == "5":
		return "idx:" + ps[1], 2
	case len(ps) >= 4 && ps[0] == "2":
		return "rgb:" + ps[1] + "," + ps[2] + "," + ps[3], 4
	}
	return "", len(ps)
}

// escapeAt reads the escape sequence s starts with: a CSI's parameters
// and final byte, or nothing for another sequence (OSC, a two-byte one);
// n is its length.
func escapeAt(s string) (params string, final byte, n int) {
	if len(s) < 2 {
		return "", 0, len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return s[2:i], s[i], i + 1
			}
		}
		return "", 0, len(s)
	case ']':
		// OSC: up to BEL or ST.
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return "", 0, i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return "", 0, i + 2
			}
		}
		return "", 0, len(s)
	}
	return "", 0, 2
}

// cellText is the row's text without its styles.
func cellText(cells []cell) string {
	var b strings.Builder
	for _, c := range cells {
		b.WriteRune(c.r)
	}
	return b.String()
}
