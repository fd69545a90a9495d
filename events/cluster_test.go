package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// The contract holds on a replicated stream too, where JetStream reports
// a lost expected-sequence race as 10164 instead of 10071.
func TestJetStreamLogClusteredR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped in -short")
	}
	eventstest.TestLog(t, func(t *testing.T) eventstest.Harness {
		// A fresh cluster per case: deleting and re-creating an R3 stream
		// of the same name races with the old incarnation's consumers.
		nodes := natstest.StartCluster(t, 3)
		js := nodes[0].JS
		ctx := context.Background()
		if _, err := events.EnsureStream(ctx, js, events.StreamOptions{Replicas: 3}); err != nil {
			t.Fatal(err)
		}
		natstest.WaitStreamLed(t, js, events.Stream)
		return eventstest.Harness{
			Log:        events.New(js, events.Options{Source: "fleetd/test/events"}),
			PublishRaw: func(subj string, data []byte) error { _, err := js.Publish(ctx, subj, data); return err },
		}
	})
}

func TestClusterKeepsWorkingWithOneNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped in -short")
	}
	nodes := natstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := events.EnsureStream(ctx, nodes[0].JS, events.StreamOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitStreamLed(t, nodes[0].JS, events.Stream)
	// Write through the third node, the one that will stay up longest,
	// and read through the second, so both paths cross the cluster.
	writer := events.New(nodes[2].JS, events.Options{Source: "fleetd/n3/test"})
	reader := events.New(nodes[1].JS, events.Options{})
	var ids []string
	appendN := func(n int) {
		for i := range n {
			ack, err := writer.Append(ctx, events.Event{Subject: "w1", Data: events.AgentQueued{Text: fmt.Sprint(len(ids), i)}})
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			ids = append(ids, ack.ID)
		}
	}
	appendN(20)

	nodes[0].Close()

	// The stream may need a moment to elect a new leader; appends retry
	// through that inside their timeout, and must all land.
	appendN(20)
	// Reads create a consumer, which needs the meta leader: if the node
	// that went down held it, the first reads may wait out an election.
	var (
		got []events.Event
		err error
	)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		got, err = eventstest.Collect(rctx, reader, events.Query{})
		rcancel()
		if err == nil {
			t.Logf("read after %d attempt(s), %v", attempt, time.Since(start))
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("reads still failing a minute after a node went down: %v", err)
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("read %d events after a node went down, want %d", len(got), len(ids))
	}
	for i, ev := range got {
		if ev.ID != ids[i] {
			t.Fatalf("event %d is %s, want %s", i, ev.ID, ids[i])
		}
	}
}

// Reads opened right after a member is killed (-9) are not stranded on
// it. Until the others notice its silence, JetStream may place a reader's
// R1 consumer on the dead member; the create is then never answered, and
// asked again under the same name it is the same consumer on the same
// member. Readers hung so until nats-server declared the member gone, two
// and a half minutes later; a gateway's fold stood still as long.
func TestReadsRightAfterAMemberIsKilledAreNotStrandedOnIt(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped in -short")
	}
	nodes, members := natstest.StartClusterWithProcesses(t, 1, 2)
	js := nodes[0].JS
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := events.EnsureStream(ctx, js, events.StreamOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitStreamLed(t, js, events.Stream)
	log := events.New(js, events.Options{Source: "fleetd/n1/test"})
	const n = 10
	for i := range n {
		if _, err := log.Append(ctx, events.Event{Subject: "w1", Data: events.AgentQueued{Text: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The victim leads neither the meta group nor the stream: what is
	// under test is where consumers go, not an election, which would
	// make every request wait.
	victim := victimLeadingNothing(t, nodes[0], members)
	victim.Kill(t)
	killed := time.Now()
	// The leader still takes a killed member for live for about three
	// seconds (three missed raft heartbeats); then it places consumers
	// elsewhere. Reads in that window land a third of theirs on it.
	reads := 0
	for time.Since(killed) < 4*time.Second {
		reads++
		rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
		got, err := eventstest.Collect(rctx, log, events.Query{})
		rcancel()
		if err != nil || len(got) != n {
			t.Fatalf("read %d, %v after %s was killed: %d events, %v", reads, time.Since(killed).Round(time.Millisecond), victim.Name(), len(got), err)
		}
	}
	t.Logf("%d whole reads in the %v after %s was killed", reads, time.Since(killed).Round(time.Millisecond), victim.Name())
}

// victimLeadingNothing returns a member that leads neither the JetStream
// meta group nor the FLEET stream, moving the stream's leadership off one
// if need be.
func victimLeadingNothing(t *testing.T, in *natstest.Server, members []*natstest.Member) *natstest.Member {
	t.Helper()
	var victim *natstest.Member
	checkfor.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		jsz, err := in.NATS().Jsz(nil)
		if err != nil || jsz.Meta == nil || jsz.Meta.Leader == "" {
			return fmt.Errorf("no meta leader: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := in.JS.Stream(ctx, events.Stream)
		if err != nil {
			return err
		}
		streamLeader := s.CachedInfo().Cluster.Leader
		if streamLeader == "" {
			// Mid-election (after a step down below): any member may win.
			return fmt.Errorf("stream %s has no leader", events.Stream)
		}
		for _, m := range members {
			if m.Name() != jsz.Meta.Leader && m.Name() != streamLeader {
				victim = m
				return nil
			}
		}
		// Both members lead one each: move the stream's leadership.
		if _, err := in.NC.Request("$JS.API.STREAM.LEADER.STEPDOWN."+events.Stream, nil, 2*time.Second); err != nil {
			return fmt.Errorf("stream leader step down: %w", err)
		}
		return fmt.Errorf("meta led by %s, stream by %s", jsz.Meta.Leader, streamLeader)
	})
	return victim
}
