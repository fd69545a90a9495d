package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge"
)

// --kinds is auto, none or a list of the real CLIs' kinds; anything else
// is refused with the kinds there are.
func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"auto", nil, ""},
		{"none", []string{}, ""},
		{"codex, pi,codex", []string{"codex", "pi"}, ""},
		{"claude,aider", nil, `unknown kind "aider"`},
		{"sim", nil, `unknown kind "sim"`},
	} {
		got, err := ParseKinds(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "opencode") {
				t.Errorf("ParseKinds(%q): error %v, want one naming %s and the kinds there are", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("ParseKinds(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}

// Every real kind gets its rows or a skip row: one not on PATH says how
// to install it, one not asked for says so; --claude on and off add and
// take Claude Code whatever --kinds says.
func TestPickKinds(t *testing.T) {
	installed := func(kinds ...string) func(string) bool {
		return func(k string) bool { return slices.Contains(kinds, k) }
	}
	for _, tc := range []struct {
		name   string
		kinds  []string
		claude string
		onPath func(string) bool
		run    []string
		notAsk []string
	}{
		{"auto runs every installed kind", nil, "auto", installed("claude", "codex", "gemini", "opencode", "pi"),
			[]string{"claude", "codex", "gemini", "opencode", "pi"}, nil},
		{"auto skips the missing", nil, "auto", installed("pi", "codex"), []string{"codex", "pi"}, nil},
		{"a list", []string{"gemini"}, "auto", installed("claude", "gemini"), []string{"gemini"},
			[]string{"claude", "codex", "opencode", "pi"}},
		{"none", []string{}, "auto", installed("claude"), nil, []string{"claude", "codex", "gemini", "opencode", "pi"}},
		{"--claude on beside a list", []string{"pi"}, "on", installed("claude", "pi"), []string{"claude", "pi"},
			[]string{"codex", "gemini", "opencode"}},
		{"--claude off", nil, "off", installed("claude", "pi"), []string{"pi"}, []string{"claude"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pickKinds(tc.kinds, tc.claude, tc.onPath)
			if !slices.Equal(p.run, tc.run) {
				t.Errorf("run %v, want %v", p.run, tc.run)
			}
			if len(p.run)+len(p.skip) != 5 {
				t.Errorf("run %v and skip %v: want each of the 5 kinds once", p.run, p.skip)
			}
			for k, why := range p.skip {
				if slices.Contains(tc.notAsk, k) {
					if !strings.Contains(why, "not asked for") {
						t.Errorf("%s skipped because %q, want not asked for", k, why)
					}
					continue
				}
				if !strings.Contains(why, "not on PATH") || !strings.Contains(why, ".ci/install-"+k+".sh") {
					t.Errorf("%s skipped because %q, want not on PATH and how to install it", k, why)
				}
			}
			for _, k := range tc.run {
				if _, both := p.skip[k]; both {
					t.Errorf("%s both run and skipped", k)
				}
			}
			rows := skipRows("codex", "why")
			if len(rows) != 1 || rows[0].Name != "whole turn: real Codex + fake API" || rows[0].Status != StatusSkip {
				t.Errorf("skip rows %+v, want one skipped whole-turn row named for Codex", rows)
			}
		})
	}
}

// A kind's whole turn is checked against its own floor with its target;
// the pause floor is only there when fleetd pressed Enter at the sign.
func TestTurnSetRowsAgainstTheKindsFloor(t *testing.T) {
	ms := func(v ...float64) Sample {
		var s Sample
		for _, x := range v {
			s = append(s, time.Duration(x*float64(time.Millisecond)))
		}
		return s
	}
	ts := turnSet{method: herdrbridge.MethodSendInput, whole: ms(510, 512, 514), floor: ms(500, 501, 502)}
	rows := ts.rows("codex", "real Codex + fake API", realTarget)
	whole := rows[0]
	if whole.Name != "whole turn: real Codex + fake API" || whole.Base != 501 || whole.Status != StatusOK || whole.Target != "≤ floor + 15ms" {
		t.Errorf("whole row %+v: want base 501 (the floor's p50), ok against floor + 15ms", whole)
	}
	if !strings.Contains(whole.Note, "fixed 300 ms pause") {
		t.Errorf("whole row's note %q does not say how fleetd typed it", whole.Note)
	}
	if rows[1].Name != "agent floor, do-nothing hooks: real Codex + fake API" || rows[1].P50 != 501 {
		t.Errorf("floor row %+v", rows[1])
	}
	for _, r := range rows {
		if strings.Contains(r.Name, "herdr's pause") {
			t.Errorf("a pause floor row for a kind typed without the sign: %+v", r)
		}
	}
	ts = turnSet{method: herdrbridge.MethodLanded, whole: ms(60, 61, 70), floor: ms(50, 51, 52), pauseFloor: ms(350, 351, 352)}
	rows = ts.rows("", "sim-agent, think 0", simTarget)
	if rows[0].Status != StatusMiss || rows[0].Target != "≤ floor + 5ms" {
		t.Errorf("whole row %+v: want a miss, 10 ms over the floor against 5", rows[0])
	}
	if rows[2].Name != "agent floor, do-nothing hooks, Enter after herdr's pause: sim-agent, think 0" || rows[2].Base != 51 {
		t.Errorf("pause floor row %+v", rows[2])
	}
}
