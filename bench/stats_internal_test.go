package bench

import (
	"testing"
	"time"
)

func TestMostWithinCountsTheDensestWindow(t *testing.T) {
	ms := func(v ...int) Sample {
		var s Sample
		for _, x := range v {
			s = append(s, time.Duration(x)*time.Millisecond)
		}
		return s
	}
	for _, c := range []struct {
		s    Sample
		w    time.Duration
		want int
	}{
		{nil, 5 * time.Millisecond, 0},
		{ms(7), 5 * time.Millisecond, 1},
		// Unsorted in, as the fan-out collects them: agent by agent.
		{ms(40, 0, 41, 10, 42, 44, 20), 5 * time.Millisecond, 4},
		// A window's ends are both in it.
		{ms(0, 5, 10), 5 * time.Millisecond, 2},
		{ms(0, 1, 2, 3), time.Millisecond, 2},
		{ms(3, 3, 3), 0, 3},
	} {
		if got := c.s.MostWithin(c.w); got != c.want {
			t.Errorf("%v.MostWithin(%v) = %d, want %d", c.s, c.w, got, c.want)
		}
	}
}
