package bench_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/bench"
)

func TestCompareFlagsRegressionsBeyondNoiseOnly(t *testing.T) {
	ratio := func(name string, p50, base float64, unit string) bench.Row {
		r := bench.Row{Name: name, Sync: true, Unit: unit, P50: p50, Base: base, BaseName: "raw", Status: bench.StatusOK}
		r.Ratio()
		return r
	}
	delta := func(name string, p50, base float64) bench.Row {
		r := bench.Row{Name: name, Sync: true, Unit: bench.UnitMs, P50: p50, Base: base, BaseName: "floor", Status: bench.StatusOK}
		r.Delta()
		return r
	}
	plain := func(name string, p50 float64, unit string) bench.Row {
		return bench.Row{Name: name, Sync: true, Unit: unit, P50: p50, Status: bench.StatusNone}
	}
	before := bench.Report{Mode: "quick", Rows: []bench.Row{
		ratio("append", 50_000, 100_000, bench.UnitPerSec),                         // 0.50×
		ratio("rebuild", 20_000, 100_000, bench.UnitPerSec),                        // 0.20×
		delta("whole turn", 104, 100),                                              // +4 ms
		delta("overhead", 101.0, 100),                                              // +1 ms
		plain("roster p99", 2.0, bench.UnitMs),                                     //
		plain("rss", 50, bench.UnitMB),                                             //
		plain("gone", 1, bench.UnitMs),                                             // only before
		{Name: "claude", Sync: true, Unit: bench.UnitMs, Status: bench.StatusSkip}, // not measured before
	}}
	now := bench.Report{Mode: "quick", Rows: []bench.Row{
		// A loaded machine halves both the fleetd rate and its same-run
		// baseline: the ratio, and so the verdict, stays.
		ratio("append", 25_000, 50_000, bench.UnitPerSec),
		ratio("rebuild", 50_000, 100_000, bench.UnitPerSec), // 0.50×: better
		delta("whole turn", 209, 200),                       // +9 ms: regressed
		delta("overhead", 101.2, 100),                       // +0.2 ms more: within the time floor
		plain("roster p99", 2.1, bench.UnitMs),              // +5 %: within noise
		plain("rss", 80, bench.UnitMB),                      // +60 %: regressed
		plain("claude", 900, bench.UnitMs),
		plain("new", 1, bench.UnitMs), // only now
	}}
	cs := bench.Compare(before, now, 0.2)
	want := map[string]string{
		"append": bench.VerdictSame, "rebuild": bench.VerdictBetter, "whole turn": bench.VerdictRegressed,
		"overhead": bench.VerdictWorse, "roster p99": bench.VerdictWorse, "rss": bench.VerdictRegressed,
		"claude": bench.VerdictMissing, "new": bench.VerdictMissing, "gone": bench.VerdictMissing,
	}
	got := map[string]string{}
	for _, c := range cs {
		got[c.Name] = c.Verdict
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s: verdict %q, want %q", name, got[name], v)
		}
	}
	if len(cs) != len(want) {
		t.Errorf("%d changes, want %d: %+v", len(cs), len(want), cs)
	}
	if n := bench.Regressions(cs); n != 2 {
		t.Errorf("%d regressions, want 2", n)
	}

	var out bytes.Buffer
	if err := bench.PrintComparison(&out, before, now, cs, 0.2); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"whole turn", "+4.00ms", "+9.00ms", "REGRESSED", "2 of 9 rows regressed"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("comparison does not show %q:\n%s", line, out.String())
		}
	}
}

func TestReadReportRefusesWhatIsNotAReport(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"junk.json": "{not json", "empty.json": `{"rows":[]}`} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := bench.ReadReport(p); err == nil {
			t.Errorf("%s read as a report", name)
		}
	}
	if _, err := bench.ReadReport(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file read as a report")
	}
}
