package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
)

// Verdicts of a compared row.
const (
	VerdictSame      = "~"
	VerdictBetter    = "better"
	VerdictWorse     = "worse"     // worse, but within the noise allowance
	VerdictRegressed = "REGRESSED" // worse beyond it
	VerdictMissing   = "missing"   // in one run only, or skipped/failed in one
)

// Change is one row of two runs side by side.
type Change struct {
	Name string
	Sync bool
	// Old and New are the figures compared: the row against its same-run
	// baseline when it has one (a ratio or a difference, as the row's
	// target reads it), else its median.
	Old, New float64
	// Basis says which figure that is: "vs base ×", "vs base Δ" or "p50".
	Basis string
	Unit  string
	// Rel is the change as a fraction of Old, signed so that positive is
	// worse whatever the unit's direction.
	Rel     float64
	Verdict string
}

// Compare sets every row of now beside the same row (name and sync
// setting) of before. A row regresses when it got worse by more than
// noise (a fraction: 0.2 is 20 %) — and, for times, by more than a
// quarter of a millisecond, below which a 2-core machine's scheduling
// moves figures anyway.
//
// Rows with a baseline measured in the same run are compared on the
// figure their target reads (p50 over base, or p50 minus base): the
// baseline moves with the machine's load and cancels it, so two runs on
// different days still compare the fabric and not the weather. Most
// figures are already medians of many samples; the restart rows are one
// start of fleetd against one of NATS alone, so their difference moves
// by tens of milliseconds between runs, and a flag on one of them is
// worth a second run before it is believed.
func Compare(before, now Report, noise float64) []Change {
	type key struct {
		name string
		sync bool
	}
	old := map[key]Row{}
	for _, r := range before.Rows {
		old[key{r.Name, r.Sync}] = r
	}
	var out []Change
	for _, r := range now.Rows {
		o, ok := old[key{r.Name, r.Sync}]
		delete(old, key{r.Name, r.Sync})
		c := Change{Name: r.Name, Sync: r.Sync, Unit: r.Unit, Verdict: VerdictMissing}
		if !ok || !measured(o) || !measured(r) {
			out = append(out, c)
			continue
		}
		c.Old, c.Basis = figure(o)
		c.New, _ = figure(r)
		c.Rel, c.Verdict = judge(c, noise)
		out = append(out, c)
	}
	for _, r := range before.Rows {
		if _, gone := old[key{r.Name, r.Sync}]; gone {
			out = append(out, Change{Name: r.Name, Sync: r.Sync, Unit: r.Unit, Verdict: VerdictMissing})
		}
	}
	return out
}

func measured(r Row) bool { return r.Status != StatusSkip && r.Status != StatusFail }

// figure is what a row is judged on, and its name.
func figure(r Row) (float64, string) {
	switch {
	case r.BaseName == "" || r.Base == 0:
		return r.P50, "p50"
	case strings.HasSuffix(r.Versus, "×"):
		return r.P50 / r.Base, "vs base ×"
	default:
		return r.P50 - r.Base, "vs base Δ"
	}
}

// judge signs the change so that positive is worse: rates are better
// higher, everything else (times, memory, counts, and ratios of them)
// lower.
func judge(c Change, noise float64) (float64, string) {
	d := c.New - c.Old
	if c.Unit == UnitPerSec {
		d = -d
	}
	rel := d / math.Max(math.Abs(c.Old), 1e-9)
	small := math.Abs(rel) <= noise || (c.Unit == UnitMs && c.Basis != "vs base ×" && math.Abs(d) <= 0.25)
	switch {
	case small && d > 0:
		return rel, VerdictWorse
	case small:
		return rel, VerdictSame
	case d > 0:
		return rel, VerdictRegressed
	}
	return rel, VerdictBetter
}

// Regressions counts the regressed rows.
func Regressions(cs []Change) int {
	n := 0
	for _, c := range cs {
		if c.Verdict == VerdictRegressed {
			n++
		}
	}
	return n
}

// PrintComparison writes the changes as a table under a line naming both
// runs.
func PrintComparison(w io.Writer, before, now Report, cs []Change, noise float64) error {
	fmt.Fprintf(w, "fleetd bench: %s run of %s (load %s) against %s run of %s (load %s); noise allowance %.0f%%\n\n",
		now.Mode, now.Started.Format("2006-01-02 15:04"), now.Load, before.Mode, before.Started.Format("2006-01-02 15:04"), before.Load, noise*100)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tSYNC\tON\tBEFORE\tNOW\tCHANGE\tVERDICT")
	for _, c := range cs {
		sync := "off"
		if c.Sync {
			sync = "on"
		}
		if c.Verdict == VerdictMissing {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%s\n", c.Name, sync, c.Verdict)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.0f%%\t%s\n", c.Name, sync, c.Basis, show(c.Old, c), show(c.New, c), c.Rel*100, c.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d of %d rows regressed (CHANGE is signed so that + is worse)\n", Regressions(cs), len(cs))
	return nil
}

func show(v float64, c Change) string {
	switch c.Basis {
	case "vs base ×":
		return fmt.Sprintf("%.2f×", v)
	case "vs base Δ":
		return fmt.Sprintf("%+.2f%s", v, c.Unit)
	}
	return Format(v, c.Unit)
}

// ReadReport reads a report `fleetd bench --json` wrote.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("%s: not a fleetd bench --json report: %w", path, err)
	}
	if len(r.Rows) == 0 {
		return Report{}, fmt.Errorf("%s: a report with no rows", path)
	}
	return r, nil
}
