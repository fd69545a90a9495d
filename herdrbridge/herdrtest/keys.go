package herdrtest

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

var namedKeys = map[string]string{
	"enter": "\r", "return": "\r",
	"esc": "\x1b", "escape": "\x1b",
	"tab": "\t", "shift+tab": "\x1b[Z", "backtab": "\x1b[Z",
	"backspace": "\x7f",
	"up":        "\x1b[A", "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D",
	"home": "\x1b[H", "end": "\x1b[F", "pageup": "\x1b[5~", "pagedown": "\x1b[6~",
	"insert": "\x1b[2~", "delete": "\x1b[3~",
	"space": " ", "minus": "-", "plus": "+",
	"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
	"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
	"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
}

// encodeKey turns one herdr key name into the bytes a legacy (non-kitty)
// terminal sends for it, following herdr's keybind parser: names are
// case-insensitive, ctrl+x has the alias C-x, alt+x sends ESC x, a single
// printable character is itself, and prefix+… is rejected.
func encodeKey(name string) (string, error) {
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		if r >= 0x20 && r != 0x7f {
			return name, nil
		}
	}
	k := strings.ToLower(name)
	if s, ok := namedKeys[k]; ok {
		return s, nil
	}
	if rest, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return ctrl(name, rest)
	}
	if rest, ok := strings.CutPrefix(name, "C-"); ok {
		return ctrl(name, strings.ToLower(rest))
	}
	if rest, ok := strings.CutPrefix(k, "alt+"); ok {
		if s, err := encodeKey(name[len("alt+"):]); err == nil && rest != "" {
			return "\x1b" + s, nil
		}
	}
	return "", fmt.Errorf("unsupported key %s", name)
}

func ctrl(name, key string) (string, error) {
	if len(key) == 1 {
		switch c := key[0]; {
		case c >= 'a' && c <= 'z':
			return string(rune(c - 'a' + 1)), nil
		case c == '[' || c == '\\' || c == ']' || c == '^' || c == '_':
			return string(rune(c - '@')), nil
		case c == ' ' || c == '@':
			return "\x00", nil
		}
	}
	if key == "space" {
		return "\x00", nil
	}
	return "", fmt.Errorf("unsupported key %s", name)
}
