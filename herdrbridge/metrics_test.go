package herdrbridge

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsTimeHerdrCallsByMethod(t *testing.T) {
	m := NewMetrics()
	m.Timed("pane.read", 2*time.Millisecond)
	m.Timed("pane.read", 3*time.Millisecond)
	m.Timed("agent.prompt", time.Millisecond)
	// One histogram series per method, each with its observations.
	ch := make(chan prometheus.Metric, 10)
	m.HerdrDuration.Collect(ch)
	close(ch)
	if n := len(ch); n != 2 {
		t.Errorf("%d histogram series, want 2 (pane.read, agent.prompt)", n)
	}
	// Took reads each method's count and sum back from the histogram.
	if got, want := m.Took("pane.read"), (Took{Calls: 2, Total: 5 * time.Millisecond}); got != want {
		t.Errorf("Took(pane.read) = %+v, want %+v", got, want)
	}
	if got, want := m.Took("agent.prompt"), (Took{Calls: 1, Total: time.Millisecond}); got != want {
		t.Errorf("Took(agent.prompt) = %+v, want %+v", got, want)
	}
	if got := m.Took("pane.get"); got != (Took{}) {
		t.Errorf("Took of a method never called = %+v, want zero", got)
	}
	// … and asking made no series of it.
	ch = make(chan prometheus.Metric, 10)
	m.HerdrDuration.Collect(ch)
	close(ch)
	if n := len(ch); n != 2 {
		t.Errorf("%d histogram series after Took(pane.get), want still 2", n)
	}
}
