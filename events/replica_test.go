package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
)

// A member that restarts behind the others (a kill -9, a reboot) catches
// up its copy of the stream while readers come and go; a reader placed on
// it then must not deliver a filter's later events with earlier ones
// missing. Readers created the moment it is back each see every event of
// their filter, in order, none skipped.
func TestReadersOfARestartedMemberSkipNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped in -short")
	}
	ports := natstest.FreePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	cfgs := make([]embeddednats.Config, 3)
	srvs := make([]*embeddednats.Server, 3)
	errs := make(chan error, 3)
	for i := range cfgs {
		cfgs[i] = embeddednats.Config{DataDir: t.TempDir(), ServerName: fmt.Sprintf("r%d", i+1), ClusterName: "replica-test",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: routes, ReadyTimeout: 60 * time.Second}
		srv, err := embeddednats.New(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		srvs[i] = srv
		t.Cleanup(func() { srvs[i].Close() })
		go func() { errs <- srv.Start(context.Background()) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nc, err := srvs[0].Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.EnsureStream(ctx, js, events.StreamOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitStreamLed(t, js, events.Stream)
	log := events.New(js, events.Options{Source: "fleetd/r1/test"})
	appendN := func(n int) {
		for i := range n {
			if _, err := log.Append(ctx, events.Event{Subject: fmt.Sprintf("w%d", i%4), Data: events.AgentQueued{Text: fmt.Sprint(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(200)
	// r3 goes away; the others take 3,000 more events; r3 comes back.
	srvs[2].Close()
	appendN(3000)
	want := map[string][]uint64{}
	for ev, err := range log.Read(ctx, events.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		want[ev.Subject] = append(want[ev.Subject], ev.Seq)
	}
	back, err := embeddednats.New(cfgs[2])
	if err != nil {
		t.Fatal(err)
	}
	srvs[2] = back
	if err := back.Start(ctx); err != nil {
		t.Fatal(err)
	}
	nc3, err := back.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc3.Close()
	js3, err := jetstream.New(nc3)
	if err != nil {
		t.Fatal(err)
	}
	reader := events.New(js3, events.Options{})
	for round := range 12 {
		agent := fmt.Sprintf("w%d", round%4)
		var got []uint64
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		for ev, err := range reader.Read(rctx, events.Query{Subjects: []string{"fleet.agent." + agent + ".>"}}) {
			if err != nil {
				t.Fatalf("round %d: after %d of %s's %d events: %v", round, len(got), agent, len(want[agent]), err)
			}
			got = append(got, ev.Seq)
		}
		rcancel()
		if fmt.Sprint(got) != fmt.Sprint(want[agent]) {
			t.Fatalf("round %d: a reader through the restarted member read %d of %s's %d events (first missing: %d)",
				round, len(got), agent, len(want[agent]), firstMissing(got, want[agent]))
		}
	}
}

func firstMissing(got, want []uint64) uint64 {
	have := map[uint64]bool{}
	for _, s := range got {
		have[s] = true
	}
	for _, s := range want {
		if !have[s] {
			return s
		}
	}
	return 0
}
