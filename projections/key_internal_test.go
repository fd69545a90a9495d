package projections

import (
	"regexp"
	"testing"
)

// validKey is written out for speed; it must say what jetstream's key
// pattern says, for every kind of name: empty, dots at either end or
// doubled, each allowed character, and characters just outside the
// allowed ranges.
func TestValidKeyIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`)
	names := []string{
		"", ".", "..", "a", "a.", ".a", "a..b", "a.b", "a.b.c", "01JF6Z0000", "w-claude-1",
		"a/b", "a=b", "a_b", "a b", "a*", "a>", "é", "a\x00", "_b64_abc", "A.Z.0.9",
		"@", "[", "`", "{", ":", "/", "=", "-", "_", "a.-", "a\n",
	}
	// Every byte on its own and between tokens.
	for c := range 256 {
		names = append(names, string(rune(c)), "a"+string(byte(c))+"b", "a."+string(byte(c)))
	}
	for _, n := range names {
		if got, want := validKey(n), re.MatchString(n); got != want {
			t.Errorf("validKey(%q) = %v, the pattern says %v", n, got, want)
		}
	}
}

// FuzzValidKey holds validKey to the pattern on any input.
func FuzzValidKey(f *testing.F) {
	re := regexp.MustCompile(`^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`)
	for _, s := range []string{"a.b", "..", "w-claude-1", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if got, want := validKey(n), re.MatchString(n); got != want {
			t.Errorf("validKey(%q) = %v, the pattern says %v", n, got, want)
		}
	})
}
