package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/fleetd/fleetd/bench"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// BenchmarkRoster is one Views.Roster call on a projection of 1,000 agents
// over 10 hosts (registered and idle), the scale row of `fleetd bench`.
func BenchmarkRoster(b *testing.B) {
	srv := natstest.Start(b)
	ctx := context.Background()
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		b.Fatal(err)
	}
	log := events.New(srv.JS, events.Options{Source: "fleetd/bench/projections"})
	f := bench.NewFleet(10, 1000)
	last, err := bench.Publish(ctx, srv.JS, f.Announce())
	if err != nil {
		b.Fatal(err)
	}
	p := projections.New(log, srv.JS, projections.Options{})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
		p.Close()
	})
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := p.WaitSeq(wctx, last); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if n := len(p.Roster()); n != len(f.Agents) {
			b.Fatalf("roster has %d agents, want %d", n, len(f.Agents))
		}
	}
}
