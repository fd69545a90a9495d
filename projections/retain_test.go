package projections_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

// Once retention trimmed the log's beginning, a restart and a rebuild
// both start from the checkpoint, never from what is left of the log, and
// yield exactly the views of a projection that folded every event; a
// rebuild that no checkpoint can cover refuses (ErrTrimmed).
func TestTrimmedLogRestartsAndRebuildsFromTheCheckpoint(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 23, Events: 4000 / workloadScale})
	now := func() time.Time { return w.End }
	cut := len(w.Ops) * 2 / 3

	// ref folds everything, uninterrupted, into its own buckets.
	ref := start(t, projections.New(e.log, e.js, projections.Options{Now: now, BucketPrefix: "ref_", FlushInterval: 5 * time.Millisecond}))
	live := start(t, projections.New(e.log, e.js, projections.Options{Now: now, FlushInterval: 5 * time.Millisecond}))
	last, err := projectionstest.Play(ctx, e.log, e.js, w.Ops[:cut])
	if err != nil {
		t.Fatal(err)
	}
	waitSeq(t, live, last)
	waitSeq(t, ref, last)
	if err := live.stop(); err != nil {
		t.Fatal(err)
	}
	h := live.Horizon()
	if h.Checkpoint != live.Applied() || h.Stream.IsZero() || len(h.Live) == 0 {
		t.Fatalf("horizon after stop %+v, applied %d", h, live.Applied())
	}

	// Trim everything the stopped projection folded.
	if _, err := events.Trim(ctx, e.js, events.SubjectAll, h.Checkpoint+1); err != nil {
		t.Fatal(err)
	}
	st, err := e.log.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.FirstSeq != h.Checkpoint+1 {
		t.Fatalf("trimmed stream starts at %d, want %d", st.FirstSeq, h.Checkpoint+1)
	}
	last, err = projectionstest.Play(ctx, e.log, e.js, w.Ops[cut:])
	if err != nil {
		t.Fatal(err)
	}
	waitSeq(t, ref, last)
	if err := ref.stop(); err != nil {
		t.Fatal(err)
	}
	refKV := kvView(t, e.js, "ref_")
	refMem := memView(t, ref, refKV.turnIDs())

	restarted := start(t, projections.New(e.log, e.js, projections.Options{Now: now}))
	waitSeq(t, restarted, last)
	if err := restarted.stop(); err != nil {
		t.Fatal(err)
	}
	if err := diff("restarted KV vs uninterrupted KV", kvView(t, e.js, "fleet_"), refKV); err != nil {
		t.Fatal(err)
	}
	if err := diff("restarted memory vs uninterrupted memory", memView(t, restarted, refKV.turnIDs()), refMem); err != nil {
		t.Fatal(err)
	}

	rebuilt := projections.New(e.log, e.js, projections.Options{Now: now})
	if err := rebuilt.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if err := diff("rebuilt KV vs uninterrupted KV", kvView(t, e.js, "fleet_"), refKV); err != nil {
		t.Fatal(err)
	}
	if err := diff("rebuilt memory vs uninterrupted memory", memView(t, rebuilt, refKV.turnIDs()), refMem); err != nil {
		t.Fatal(err)
	}

	// Trimmed past the checkpoint: a rebuild would lose state, so it
	// refuses.
	more := e.append(t, events.Event{Subject: "h-late", Data: events.HostUp{Host: "h-late"}})
	e.append(t, events.Event{Subject: "h-late", Data: events.HostUp{Host: "h-late"}})
	if _, err := events.Trim(ctx, e.js, events.SubjectAll, more.Seq+1); err != nil {
		t.Fatal(err)
	}
	again := projections.New(e.log, e.js, projections.Options{Now: now})
	if err := again.Rebuild(ctx); !errors.Is(err, projections.ErrTrimmed) {
		t.Fatalf("rebuild past the checkpoint: %v, want ErrTrimmed", err)
	}
}

// A stream deleted and created again (its sequences restart at 1) is
// followed from its first event; the views keep what they held, and a
// restart resumes on the new stream.
func TestViewsFollowAStreamCreatedAgain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow, FlushInterval: 5 * time.Millisecond, CheckpointInterval: 10 * time.Millisecond}))
	ids := events.NewULIDSource(time.Now)
	done, open := ids(), ids()
	e.append(t, reg("w1", "h1", ""))
	e.append(t, queued("w1", done, "first"))
	e.append(t, events.Event{Subject: "w1", CorrelationID: done, Time: at(3), Data: events.AgentTyped{Pane: "p1"}})
	e.append(t, events.Event{Subject: "w1", CorrelationID: done, Time: at(4), Data: events.AgentReplied{Reply: "one", Tokens: events.Tokens{In: 1, Out: 2}}})
	ack := e.append(t, queued("w1", open, "second"))
	waitSeq(t, p, ack.Seq)
	before, err := e.log.State(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := e.js.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := events.EnsureStream(ctx, e.js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	// The open turn goes on in the new stream, whose sequence 1 the old
	// projection position (5) is long past.
	e.append(t, events.Event{Subject: "w1", CorrelationID: open, Time: at(5), Data: events.AgentTyped{Pane: "p1"}})
	ack = e.append(t, events.Event{Subject: "w1", CorrelationID: open, Time: at(6), Data: events.AgentReplied{Reply: "two", Tokens: events.Tokens{In: 10, Out: 20}}})
	if ack.Seq != 2 {
		t.Fatalf("the new stream's second event is at %d", ack.Seq)
	}
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		tu, ok, err := p.Turn(ctx, open)
		if err != nil || !ok || tu.State != lifecycle.StateReplied || tu.Reply != "two" {
			return fmt.Errorf("open turn after the stream came back: %+v %v %v", tu, ok, err)
		}
		return nil
	})
	a, _ := p.Agent("w1")
	if a.Tokens != (events.Tokens{In: 11, Out: 22}) {
		t.Errorf("tokens %+v: the roster lost what the old stream said, or counted twice", a.Tokens)
	}
	if tu, ok, _ := p.Turn(ctx, done); !ok || tu.Reply != "one" {
		t.Errorf("the turn ended in the old stream: %+v %v", tu, ok)
	}
	h := p.Horizon()
	if h.Stream.Equal(before.Created) || h.Applied != 2 {
		t.Errorf("horizon %+v: want the new stream at 2", h)
	}
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if h := p.Horizon(); h.Checkpoint != 2 {
			return fmt.Errorf("checkpoint %d, want 2", h.Checkpoint)
		}
		return nil
	})
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	again := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	if again.Applied() != 2 {
		t.Errorf("restart on the new stream resumed at %d, want 2", again.Applied())
	}
	if a, _ := again.Agent("w1"); a.Tokens != (events.Tokens{In: 11, Out: 22}) {
		t.Errorf("restarted tokens %+v", a.Tokens)
	}
}

// A turn that ended just before the stream was created again is still
// answered while its row waits to be written (here: never, the flushes
// are an hour apart), and it counts as ended before the new stream: a
// queued event the new stream carries for it again opens nothing.
func TestATurnEndedBeforeTheStreamCameBackIsStillReadAndStaysEnded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow, FlushInterval: time.Hour, CheckpointInterval: time.Hour}))
	done := events.NewULIDSource(time.Now)()
	e.append(t, reg("w1", "h1", ""))
	e.append(t, queued("w1", done, "first"))
	e.append(t, events.Event{Subject: "w1", CorrelationID: done, Time: at(3), Data: events.AgentTyped{Pane: "p1"}})
	e.append(t, events.Event{Subject: "w1", CorrelationID: done, Time: at(4), Data: events.AgentReplied{Reply: "one"}})
	e.append(t, events.Event{Subject: "w1", Time: at(5), Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "herdr"}})
	ack := e.append(t, events.Event{Subject: "w1", Time: at(6), Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr"}})
	waitSeq(t, p, ack.Seq)

	if err := e.js.DeleteStream(ctx, events.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := events.EnsureStream(ctx, e.js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	e.append(t, reg("w1", "h1", ""))
	again := e.append(t, queued("w1", done, "first")) // at 2: below the turn's old positions
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if h := p.Horizon(); h.Applied != again.Seq {
			return fmt.Errorf("views at %d of the new stream, want %d", h.Applied, again.Seq)
		}
		return nil
	})
	tu, ok, err := p.Turn(ctx, done)
	if err != nil || !ok || tu.State != lifecycle.StateReplied || tu.Reply != "one" {
		t.Errorf("the turn that ended in the old stream: %+v %v %v; want it replied, as before", tu, ok, err)
	}
	if a, _ := p.Agent("w1"); a.Open() != 0 {
		t.Errorf("agent w1 holds %d open turn(s), want none: the replayed queued event opened the ended turn", a.Open())
	}
}

// Final turns leave the turns bucket TurnTTL after their last write;
// open ones stay. A turns bucket made before TTLs existed is upgraded.
func TestFinalTurnsExpireFromTheTurnsBucket(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: projections.BucketTurns, History: 1, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow, TurnTTL: time.Second, FlushInterval: 5 * time.Millisecond}))
	ids := events.NewULIDSource(time.Now)
	done, open := ids(), ids()
	e.append(t, reg("w1", "h1", ""))
	e.append(t, queued("w1", done, "first"))
	e.append(t, events.Event{Subject: "w1", CorrelationID: done, Time: at(3), Data: events.AgentFailed{Reason: events.ReasonTimeout}})
	ack := e.append(t, queued("w1", open, "second"))
	waitSeq(t, p, ack.Seq)
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		_, err := kvGet[lifecycle.Turn](e.js, projections.BucketTurns, done)
		return err
	})
	checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if _, err := kvGet[lifecycle.Turn](e.js, projections.BucketTurns, done); err == nil {
			return errors.New("the final turn is still in the bucket")
		}
		return nil
	})
	if tu, err := kvGet[lifecycle.Turn](e.js, projections.BucketTurns, open); err != nil || tu.State != lifecycle.StateQueued {
		t.Fatalf("open turn: %+v %v", tu, err)
	}
}
