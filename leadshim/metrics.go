package leadshim

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// metrics are the shim's Prometheus series, on their own registry.
type metrics struct {
	reg      *prometheus.Registry
	sent     *prometheus.CounterVec
	turns    *prometheus.CounterVec
	latency  prometheus.Histogram
	requests *prometheus.CounterVec
	logins   *prometheus.CounterVec
}

func newMetrics(views projections.Views, stats func() Stats, degraded func() degradation) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetd_turns_sent_total", Help: "Turns this shim queued, by target kind (agent or role).",
		}, []string{"target"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetd_turns_total", Help: "Turns that became final while this shim ran, by outcome (replied or failed) and failure reason.",
		}, []string{"outcome", "reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fleetd_turn_duration_seconds", Help: "Queued to final, for turns that became final while this shim ran.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 14), // 0.25 s … ~34 min
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetd_http_requests_total", Help: "HTTP requests to the lead shim, by route and status code.",
		}, []string{"route", "code"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetd_dashboard_logins_total", Help: "Dashboard sign-ins at /login, by outcome (ok or refused).",
		}, []string{"outcome"}),
	}
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fleetd_queue_depth", Help: "Turns queued on agents and not yet typed, fleet-wide.",
	}, func() float64 {
		return float64(lo.SumBy(views.Roster(), func(a *projections.Agent) int { return a.QueueDepth }))
	})
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fleetd_turns_in_flight", Help: "Agents with a turn typed or submitted.",
	}, func() float64 {
		return float64(lo.CountBy(views.Roster(), func(a *projections.Agent) bool { return a.CurrentTurn != "" }))
	})
	gauge := func(name, help string, v func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	counter := func(name, help string, v func(Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(stats())) })
	}
	m.reg.MustRegister(
		gauge("fleetd_http_connections", "Open connections to the lead shim.", func(s Stats) float64 { return float64(s.Conns) }),
		gauge("fleetd_http_connections_pending", "Connections that have not sent a whole request header yet.", func(s Stats) float64 { return float64(s.PendingConns) }),
		counter("fleetd_http_connections_refused_total", "Connections closed at once, over the connection caps.", func(s Stats) uint64 { return s.ConnsRefused }),
		gauge("fleetd_event_readers", "Open GET /events streams.", func(s Stats) float64 { return float64(s.EventReaders) }),
		counter("fleetd_event_readers_refused_total", "GET /events streams refused (429) over the reader cap.", func(s Stats) uint64 { return s.EventReadersRefused }),
		counter("fleetd_event_readers_dropped_total", "GET /events streams dropped for not taking a write in time.", func(s Stats) uint64 { return s.EventReadersDropped }),
		gauge("fleetd_events_buffered", "Events decoded and waiting for their GET /events readers.", func(s Stats) float64 { return float64(s.EventsBuffered) }),
	)
	health := func(name, help string, v func(degradation) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(v(degraded())) })
	}
	m.reg.MustRegister(
		health("fleetd_health_degraded", "1 while /healthz says degraded: agents dead or needing a person, budgets exhausted.", func(d degradation) int {
			return min(len(d.reasons), 1)
		}),
		health("fleetd_agents_exited", "Agents that exited within the shim's ExitedFor (1h): dead.", func(d degradation) int { return d.exited }),
		health("fleetd_agents_session_ended", "Live agents whose Claude Code session ended (the pane shows a shell).", func(d degradation) int { return d.ended }),
		health("fleetd_agents_needing_attention", "Agents the gateway types nothing into until a person looks.", func(d degradation) int { return d.attention }),
		health("fleetd_budgets_exhausted", "Agents and roles out of budget: their new turns are refused (429 budget_exhausted).", func(d degradation) int { return d.exhausted }),
	)
	m.reg.MustRegister(m.sent, m.turns, m.latency, m.requests, m.logins, queued, inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// countOutcomes follows final turn events stored since the shim was made
// and counts each turn once: only when the event is the one that made the
// turn final. Since the shim was made, not since this follower started:
// the gateway serves (and a lead sends) before the follower is up, and a
// turn that ended in between went uncounted; a follower started again
// goes on after the last event it saw.
func (s *Server) countOutcomes(ctx context.Context) error {
	q := events.Query{Since: s.created, Subjects: []string{"fleet.agent.*.replied", "fleet.agent.*.failed"}}
	if next := s.outcomesNext.Load(); next > 0 {
		q.Since, q.FromSeq = time.Time{}, next
	}
	f, err := s.cfg.Log.Follow(ctx, q)
	if err != nil {
		return err
	}
	defer f.Stop()
	for ev := range f.Events() {
		s.countOutcome(ctx, ev)
		s.outcomesNext.Store(ev.Seq + 1)
	}
	if ctx.Err() != nil {
		return nil
	}
	return f.Err()
}

func (s *Server) countOutcome(ctx context.Context, ev events.Event) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.cfg.Views.WaitSeq(wctx, ev.Seq); err != nil {
		return
	}
	id := lifecycle.TurnID(ev)
	if id == "" {
		// A failure without a turn id joined the agent's turn in flight;
		// count it by its reason alone.
		if d, ok := ev.Data.(events.AgentFailed); ok {
			s.metrics.turns.WithLabelValues(string(lifecycle.StateFailed), d.Reason).Inc()
		}
		return
	}
	t, ok, err := s.cfg.Views.Turn(wctx, id)
	if err != nil || !ok || !t.State.Final() || t.LastSeq != ev.Seq {
		return
	}
	s.metrics.turns.WithLabelValues(string(t.State), t.Reason).Inc()
	if d := t.Duration(); d > 0 {
		s.metrics.latency.Observe(d.Seconds())
	}
}

// registerAll registers extra collectors on the shim's registry.
func registerAll(reg *prometheus.Registry, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
