package bench

import (
	"fmt"
	"slices"
	"time"
)

// Sample is a set of measured durations.
type Sample []time.Duration

// Pct is the p-th percentile (0 < p ≤ 1) by nearest rank, or 0 for an
// empty sample.
func (s Sample) Pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(p*float64(len(c))+0.5) - 1
	return c[min(max(i, 0), len(c)-1)]
}

// P50 is the median.
func (s Sample) P50() time.Duration { return s.Pct(0.50) }

// P99 is the 99th percentile (the maximum for fewer than 100 values).
func (s Sample) P99() time.Duration { return s.Pct(0.99) }

// Ms is d in milliseconds, for the table.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtMs prints d in milliseconds to two places, as the table does.
func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2fms", Ms(d)) }

// MostWithin is the largest number of s's values (times, as offsets from
// one start) that fall in any window w long: how bursty their arrival
// was.
func (s Sample) MostWithin(w time.Duration) int {
	c := slices.Clone(s)
	slices.Sort(c)
	most, lo := 0, 0
	for hi, v := range c {
		for v-c[lo] > w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}
