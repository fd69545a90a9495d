package herdrbridge

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the bridge's Prometheus series: what fleetd asks of herdr,
// by method, and the turns it typed, so the requests each turn costs
// herdr can be watched (each is a connection and time on herdr's app
// thread). One Metrics may serve several clients.
type Metrics struct {
	HerdrRequests *prometheus.CounterVec
	TurnsTyped    prometheus.Counter

	requests atomic.Uint64
}

// NewMetrics returns unregistered series; register Collectors where the
// process serves /metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		HerdrRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetd_herdr_requests_total", Help: "Requests this gateway sent to its herdr, by method (subscriptions included).",
		}, []string{"method"}),
		TurnsTyped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetd_turns_typed_total", Help: "Turns this gateway typed into its agents' panes.",
		}),
	}
}

// Collectors lists the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.HerdrRequests, m.TurnsTyped}
}

// Observe counts one request; it is a Client observer (WithObserver).
func (m *Metrics) Observe(method string) {
	m.HerdrRequests.WithLabelValues(method).Inc()
	m.requests.Add(1)
}

// Requests is how many requests were counted, all methods together.
func (m *Metrics) Requests() uint64 { return m.requests.Load() }
