package herdrbridge

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestMetricsTimeHerdrCallsByMethod(t *testing.T) {
	m := NewMetrics()
	m.Timed("pane.read", 2*time.Millisecond)
	m.Timed("pane.read", 3*time.Millisecond)
	m.Timed("agent.prompt", time.Millisecond)
	if got, want := m.Took("pane.read"), (Took{Calls: 2, Total: 5 * time.Millisecond}); got != want {
		t.Errorf("Took(pane.read) = %+v, want %+v", got, want)
	}
	if got := m.Took("pane.get"); got != (Took{}) {
		t.Errorf("Took of a method never called = %+v, want zero", got)
	}
	// One histogram series per method, each with its observations.
	ch := make(chan prometheus.Metric, 10)
	m.HerdrDuration.Collect(ch)
	close(ch)
	if n := len(ch); n != 2 {
		t.Errorf("%d histogram series, want 2 (pane.read, agent.prompt)", n)
	}
	h, err := m.HerdrDuration.GetMetricWithLabelValues("pane.read")
	if err != nil {
		t.Fatal(err)
	}
	// The pane.read histogram holds both calls, 5 ms in all.
	var pb dto.Metric
	if err := h.(prometheus.Histogram).Write(&pb); err != nil {
		t.Fatal(err)
	}
	if n, sum := pb.GetHistogram().GetSampleCount(), pb.GetHistogram().GetSampleSum(); n != 2 || sum < 0.0049 || sum > 0.0051 {
		t.Errorf("pane.read histogram: %d samples summing %gs, want 2 summing 0.005s", n, sum)
	}
}
