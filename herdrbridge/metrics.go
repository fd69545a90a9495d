package herdrbridge

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the bridge's Prometheus series: what fleetd asks of herdr,
// by method, how long herdr takes to answer, and the turns it typed, so
// the requests each turn costs herdr can be watched (each is a connection
// and time on herdr's app thread). One Metrics may serve several clients.
type Metrics struct {
	HerdrRequests *prometheus.CounterVec
	// HerdrDuration is how long herdr's calls took, by method: every turn
	// waits for a screen read before it is typed and for the prompt.
	HerdrDuration *prometheus.HistogramVec
	TurnsTyped    prometheus.Counter
	// BoundaryChecks counts the passes over /proc that check the panes'
	// environments against their roles' boundaries (each reads every
	// process's environment on the machine).
	BoundaryChecks prometheus.Counter
	// EnterWait is how long Enter waited after a turn's text was typed
	// (Lander kinds), by what ended the wait: "landed" (the composer
	// showed the whole text), "pause" (the screen could not tell: the
	// fixed pause), "timeout" (it showed none or part of it for
	// LandTimeout). Many "pause" or any "timeout" say the sign is not
	// being read on this machine's screens.
	EnterWait *prometheus.HistogramVec

	requests atomic.Uint64
}

// Took is how many calls of one herdr method ended and their time in all
// (what HerdrDuration holds for it).
type Took struct {
	Calls uint64
	Total time.Duration
}

// NewMetrics returns unregistered series; register Collectors where the
// process serves /metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		HerdrRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetd_herdr_requests_total", Help: "Requests this gateway sent to its herdr, by method (subscriptions included).",
		}, []string{"method"}),
		HerdrDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fleetd_herdr_request_duration_seconds",
			Help: "How long this gateway's calls to its herdr took, dial to answer, by method (subscriptions are not timed; agent.wait and events.wait last as long as they wait).",
			// 0.1 ms to ~6 s: a screen read on an idle herdr is a few
			// tenths of a millisecond; a wait is seconds.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 13),
		}, []string{"method"}),
		TurnsTyped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetd_turns_typed_total", Help: "Turns this gateway typed into its agents' panes.",
		}),
		BoundaryChecks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetd_boundary_checks_total", Help: "Passes over /proc checking this gateway's panes' environments against their roles' boundaries.",
		}),
		EnterWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fleetd_enter_wait_seconds",
			Help: "How long Enter waited after a turn's text was typed, by what ended the wait: landed (the composer showed it), pause (the screen could not tell), timeout.",
			// 5 ms to ~3.4 s: a paste lands in tens of milliseconds.
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 10),
		}, []string{"by"}),
	}
}

// Collectors lists the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.HerdrRequests, m.HerdrDuration, m.TurnsTyped, m.BoundaryChecks, m.EnterWait}
}

// ClientOptions are the herdrapi options that count and time a Client's
// requests in m.
func (m *Metrics) ClientOptions() []herdrapi.Option {
	return []herdrapi.Option{herdrapi.WithObserver(m.Observe), herdrapi.WithTimer(m.Timed)}
}

// Observe counts one request; it is a Client observer (WithObserver).
func (m *Metrics) Observe(method string) {
	m.HerdrRequests.WithLabelValues(method).Inc()
	m.requests.Add(1)
}

// Timed records how long one call took; it is a Client timer (WithTimer).
func (m *Metrics) Timed(method string, took time.Duration) {
	m.HerdrDuration.WithLabelValues(method).Observe(took.Seconds())
}

// observeLanding records one wait for Enter (EnterWait).
func (m *Metrics) observeLanding(waited time.Duration, by string) {
	m.EnterWait.WithLabelValues(by).Observe(waited.Seconds())
}

// Requests is how many requests were counted, all methods together.
func (m *Metrics) Requests() uint64 { return m.requests.Load() }

// Took is what the calls of method took so far, read from HerdrDuration's
// count and sum. It reads the series there are and makes none: asking of
// a method never called leaves /metrics as it was.
func (m *Metrics) Took(method string) Took {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		m.HerdrDuration.Collect(ch)
		close(ch)
	}()
	var t Took
	for pm := range ch {
		var d dto.Metric
		if pm.Write(&d) != nil || !slices.ContainsFunc(d.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == "method" && l.GetValue() == method
		}) {
			continue
		}
		t = Took{Calls: d.GetHistogram().GetSampleCount(),
			Total: time.Duration(math.Round(d.GetHistogram().GetSampleSum() * float64(time.Second)))}
	}
	return t
}
