package bench

import (
	"io"
	"time"
)

// SizeFor is a run's workload sizes as fleetd bench's flags choose them:
// the size called name, else full (quick when quick is set), with think
// as the fan-out agents' T when it is set.
func SizeFor(name string, quick bool, think time.Duration) Size {
	if name == "" {
		name = "full"
		if quick {
			name = "quick"
		}
	}
	s, _ := SizeNamed(name)
	if think > 0 {
		s.Think = think
	}
	return s
}

// SyncsNamed are the SyncAlways settings called "on" or "off"; for
// "both" (or anything else) nil, which RunAll takes as on, then off.
func SyncsNamed(name string) []bool {
	switch name {
	case "on":
		return []bool{true}
	case "off":
		return []bool{false}
	}
	return nil
}

// Write writes the report as its table (Print), or with asJSON as JSON.
func (r Report) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		return r.JSON(w)
	}
	return r.Print(w)
}

// WriteComparison sets now beside before (Compare, with noise as the
// allowance), writes the changes to w and returns how many rows
// regressed.
func WriteComparison(w io.Writer, before, now Report, noise float64) (int, error) {
	cs := Compare(before, now, noise)
	if err := PrintComparison(w, before, now, cs, noise); err != nil {
		return 0, err
	}
	return Regressions(cs), nil
}
