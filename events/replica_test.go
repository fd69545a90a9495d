package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	nodes := natstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	js := nodes[0].JS
	if _, err := events.EnsureStream(ctx, js, events.StreamOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitStreamLed(t, js, events.Stream)
	log := events.New(js, events.Options{Source: "fleetd/n1/test"})
	appendN := func(n int) {
		for i := range n {
			if _, err := log.Append(ctx, events.Event{Subject: fmt.Sprintf("w%d", i%4), Data: events.AgentQueued{Text: fmt.Sprint(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(200)
	// n3 goes away; the others take 3,000 more events; n3 comes back.
	nodes[2].Close()
	appendN(3000)
	want := map[string][]uint64{}
	for ev, err := range log.Read(ctx, events.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		want[ev.Subject] = append(want[ev.Subject], ev.Seq)
	}
	back := nodes[2].Restart(t)
	reader := events.New(back.JS, events.Options{})
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
