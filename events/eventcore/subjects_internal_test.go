package eventcore

import (
	"regexp"
	"strings"
	"testing"
)

// token is the hand-written match of agentRE and tokenRE; the patterns
// stay the spec. Every string of up to four characters over an alphabet
// with each class of character (and then the length limits) must match
// exactly as the regexps do.
func TestTokenMatchesItsPatterns(t *testing.T) {
	agent, tok := regexp.MustCompile(agentRE), regexp.MustCompile(tokenRE)
	alphabet := []string{"a", "z", "Q", "0", "9", "_", "-", ".", " ", "*", ">", "é"}
	var all []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		all = append(all, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 4)
	for _, n := range []int{62, 63, 64} {
		all = append(all, strings.Repeat("a", n), "a"+strings.Repeat("-", n-1), strings.Repeat("Z", n))
	}
	for _, s := range all {
		if got, want := token(s, false), agent.MatchString(s); got != want {
			t.Errorf("token(%q, lower) = %v, %s says %v", s, got, agentRE, want)
		}
		if got, want := token(s, true), tok.MatchString(s); got != want {
			t.Errorf("token(%q, upper) = %v, %s says %v", s, got, tokenRE, want)
		}
	}
}

// A type's category and kind are its second and third dot-separated parts,
// the third running to the end; a type with fewer than three has neither.
func TestTypeCategoryAndKind(t *testing.T) {
	for _, c := range []struct {
		typ       Type
		cat, kind string
	}{
		{TypeAgentRegistered, string(CategoryAgent), "registered"},
		{"fleet.job.slice.v2", "job", "slice.v2"},
		{"fleet..x", "", "x"},
		{"fleet.agent", "", ""},
		{"fleet", "", ""},
		{"", "", ""},
	} {
		if cat, kind := c.typ.Category(), c.typ.Kind(); string(cat) != c.cat || kind != c.kind {
			t.Errorf("%q: category %q kind %q; want %q %q", c.typ, cat, kind, c.cat, c.kind)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = TypeAgentStatus.Category(), TypeAgentStatus.Kind() }); n != 0 {
		t.Errorf("Category and Kind allocate %v times", n)
	}
}
