package projections_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

// workloadScale divides the randomized workloads (the race build sets it).
var workloadScale = 1

// tokenOracle sums each agent's reply tokens over distinct event ids: what
// the roster must show whatever duplicates the stream holds.
func tokenOracle(ops []projectionstest.Op) map[string]events.Tokens {
	seen := map[string]bool{}
	out := map[string]events.Tokens{}
	for _, op := range ops {
		d, ok := op.Event.Data.(events.AgentReplied)
		if op.Kind == projectionstest.Junk || !ok || seen[op.Event.ID] {
			continue
		}
		seen[op.Event.ID] = true
		out[op.Event.Subject] = out[op.Event.Subject].Add(d.Tokens)
	}
	return out
}

func checkTokens(t testing.TB, name string, v view, want map[string]events.Tokens) {
	t.Helper()
	for id, a := range v.Roster {
		if a.Tokens != want[id] {
			t.Errorf("%s: %s tokens %+v, want %+v", name, id, a.Tokens, want[id])
		}
	}
}

// checkTurns asserts invariants of the folded turns against the roster.
func checkTurns(t testing.TB, name string, v view) {
	t.Helper()
	inFlight := map[string]int{}
	for _, tu := range v.Turns {
		if tu.State.InFlight() {
			inFlight[tu.Agent]++
		}
	}
	for id, a := range v.Roster {
		if inFlight[id] > 1 {
			t.Errorf("%s: %s has %d turns in flight", name, id, inFlight[id])
		}
		if (a.CurrentTurn != "") != (inFlight[id] == 1) {
			t.Errorf("%s: %s current turn %q but %d in flight: %+v", name, id, a.CurrentTurn, inFlight[id], v.Turns[a.CurrentTurn])
		}
	}
}

// The live projection (folding while the workload is appended), a rebuild
// from an empty store, and the KV contents of both are the same.
func TestRebuildEqualsLiveAndKV(t *testing.T) {
	e := newEnv(t)
	w := projectionstest.Generate(projectionstest.Config{Seed: 7, Events: 10_000 / workloadScale})
	now := func() time.Time { return w.End }
	live := start(t, projections.New(e.log, e.js, projections.Options{Now: now, TurnCacheSize: 300, FlushInterval: 20 * time.Millisecond}))

	last, err := projectionstest.Play(context.Background(), e.log, e.js, w.Ops)
	if err != nil {
		t.Fatal(err)
	}
	waitSeq(t, live, last)
	if err := live.stop(); err != nil {
		t.Fatalf("live run: %v", err)
	}
	if e.log.Skipped() == 0 {
		t.Fatal("the workload's junk was not skipped: the test does not exercise it")
	}
	liveKV := kvView(t, e.js, "fleet_")
	liveMem := memView(t, live, liveKV.turnIDs())
	if err := diff("live memory vs its KV", liveMem, liveKV); err != nil {
		t.Fatal(err)
	}
	if len(liveKV.Roster) != 20 || len(liveKV.Turns) < 500/workloadScale {
		t.Fatalf("workload too thin: %d agents, %d turns", len(liveKV.Roster), len(liveKV.Turns))
	}

	rebuilt := projections.New(e.log, e.js, projections.Options{Now: now, BucketPrefix: "rb_", TurnCacheSize: 50})
	if err := rebuilt.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	rbKV := kvView(t, e.js, "rb_")
	if err := diff("rebuild KV vs live KV", rbKV, liveKV); err != nil {
		t.Fatal(err)
	}
	if err := diff("rebuild memory vs live memory", memView(t, rebuilt, liveKV.turnIDs()), liveMem); err != nil {
		t.Fatal(err)
	}
	if rebuilt.Applied() != live.Applied() {
		t.Errorf("applied: rebuild %d, live %d", rebuilt.Applied(), live.Applied())
	}
	checkTokens(t, "live", liveMem, tokenOracle(w.Ops))
	checkTurns(t, "live", liveMem)

	// Rebuild is repeatable on the same projector and store.
	if err := rebuilt.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := diff("second rebuild", kvView(t, e.js, "rb_"), liveKV); err != nil {
		t.Fatal(err)
	}
}

// A projector that dies mid-stream (its connection cut, so its last
// writes after the checkpoint land but no final checkpoint does) is
// resumed by a new one over the same buckets; the result equals a rebuild
// and no reply is counted twice.
func TestRestartResumesFromCheckpoint(t *testing.T) {
	e := newEnv(t)
	w := projectionstest.Generate(projectionstest.Config{Seed: 11, Events: 4000 / workloadScale})
	now := func() time.Time { return w.End }
	half := len(w.Ops) / 2

	nc, err := e.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js2, err := jetstreamNew(nc)
	if err != nil {
		t.Fatal(err)
	}
	first := start(t, projections.New(events.New(js2, events.Options{}), js2, projections.Options{
		Now: now, CheckpointEvery: 700 / workloadScale, CheckpointInterval: time.Hour, FlushInterval: 5 * time.Millisecond}))
	last, err := projectionstest.Play(context.Background(), e.log, e.js, w.Ops[:half])
	if err != nil {
		t.Fatal(err)
	}
	// Let the view writes after the last checkpoint land, then cut the
	// connection: the final checkpoint cannot be written. Where the
	// checkpoints fall depends on the follower's batches, which grow
	// when the machine is busy: the last one may fall on the last event
	// folded. One more op then puts writes after it (a few events, far
	// fewer than CheckpointEvery).
	var head struct{ Seq uint64 }
	for {
		waitSeq(t, first, last)
		checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
			a := first.Roster()
			kv := kvAll[projections.Agent](t, e.js, projections.BucketRoster)
			for _, row := range a {
				if !kvEqual(kv[row.Agent], *row) {
					return fmt.Errorf("%s not written yet", row.Agent)
				}
			}
			return nil
		})
		if head, err = kvGet[struct{ Seq uint64 }](e.js, projections.BucketCheckpoints, projections.CheckpointKey); err != nil {
			t.Fatal(err)
		}
		if head.Seq == 0 || head.Seq > first.Applied() || half == len(w.Ops) {
			t.Fatalf("checkpoint at %d, applied %d: want a checkpoint behind the writes", head.Seq, first.Applied())
		}
		if head.Seq < first.Applied() {
			break
		}
		if last, err = projectionstest.Play(context.Background(), e.log, e.js, w.Ops[half:half+1]); err != nil {
			t.Fatal(err)
		}
		half++
	}
	nc.Close()
	if err := first.stop(); err == nil {
		t.Log("first projector stopped cleanly despite its connection cut")
	}

	// More events while no projector runs, then a new one resumes.
	last, err = projectionstest.Play(context.Background(), e.log, e.js, w.Ops[half:])
	if err != nil {
		t.Fatal(err)
	}
	second := start(t, projections.New(e.log, e.js, projections.Options{Now: now}))
	waitSeq(t, second, last)
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	resumedKV := kvView(t, e.js, "fleet_")
	resumed := memView(t, second, resumedKV.turnIDs())
	if err := diff("resumed memory vs KV", resumed, resumedKV); err != nil {
		t.Fatal(err)
	}

	rebuilt := projections.New(e.log, e.js, projections.Options{Now: now, BucketPrefix: "rb_"})
	if err := rebuilt.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := diff("resumed vs rebuilt", resumedKV, kvView(t, e.js, "rb_")); err != nil {
		t.Fatal(err)
	}
	checkTokens(t, "resumed", resumed, tokenOracle(w.Ops))

	// A third start over a final checkpoint re-applies nothing.
	third := start(t, projections.New(e.log, e.js, projections.Options{Now: now}))
	if third.Applied() != second.Applied() {
		t.Errorf("third resumed at %d, want %d", third.Applied(), second.Applied())
	}
	if err := diff("third vs second", memView(t, third, resumedKV.turnIDs()), resumed); err != nil {
		t.Fatal(err)
	}
	// An ended turn is answered at once from KV after a restart.
	for id, tu := range resumedKV.Turns {
		if !tu.State.Final() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := third.WaitTurn(ctx, id, func(t lifecycle.Turn) bool { return t.State.Final() })
		cancel()
		if err != nil || got.State != tu.State {
			t.Fatalf("WaitTurn on ended turn %s: %+v %v", id, got, err)
		}
		break
	}
}

func kvEqual(a, b projections.Agent) bool {
	return fmt.Sprint(normalize(a)) == fmt.Sprint(normalize(b))
}

// A rebuild into emptied buckets reads the turns bucket only for turns it
// pushed out of its cache. A queued event re-appended after its turn
// ended, was pushed out and written (later batches, a flush between),
// must still not open the turn again.
func TestRebuildKeepsAnEvictedTurnEndedWhenItsQueuedIsReappended(t *testing.T) {
	e := newEnv(t)
	ids := events.NewULIDSource(time.Now)
	e.append(t, reg("w1", "h1", ""))
	var first string
	for i := range 600 { // 1,200 events: three read batches
		id := ids()
		if i == 0 {
			first = id
		}
		e.append(t, queued("w1", id, fmt.Sprint("t", i)))
		e.append(t, events.Event{Subject: "w1", CorrelationID: id, Time: at(3), Data: events.AgentFailed{Reason: events.ReasonCancelled}})
	}
	last := republish(t, e, queued("w1", first, "t0"))

	p := projections.New(e.log, e.js, projections.Options{BucketPrefix: "rb2_", TurnCacheSize: 2, CheckpointEvery: 12}) // a checkpoint flush after 768 events while catching up
	t.Cleanup(func() { p.Close() })
	if err := p.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Applied() < last {
		t.Fatalf("rebuilt to #%d, want #%d", p.Applied(), last)
	}
	if tu, ok, err := p.Turn(context.Background(), first); err != nil || !ok || tu.State != lifecycle.StateFailed {
		t.Fatalf("turn %s after the rebuild: %+v %v %v; want failed", first, tu, ok, err)
	}
	if a, _ := p.Agent("w1"); a.QueueDepth != 0 {
		t.Errorf("queue depth %d after the rebuild, want 0", a.QueueDepth)
	}
}

// A catch-up's flush can hold more writes than nats.go lets a publisher
// have in flight (4,000 async publishes by default); they go out in
// windows, and a rebuild of 6,000 turns on a store that syncs every write
// (so acks are slow and would pile up) writes every one.
func TestARebuildWritesMoreViewsThanOnePublisherMayHaveInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 12,000 events")
	}
	srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/projections"}, natstest.WithSyncAlways())
	ctx := context.Background()
	ids := events.NewULIDSource(time.Now)
	batch := []events.Event{reg("w1", "h1", "")}
	var turns []string
	for i := range 6000 {
		id := ids()
		turns = append(turns, id)
		batch = append(batch, queued("w1", id, fmt.Sprint("t", i)),
			events.Event{Subject: "w1", CorrelationID: id, Time: at(3), Data: events.AgentFailed{Reason: events.ReasonCancelled}})
	}
	for len(batch) > 0 {
		n := min(len(batch), events.MaxBatch)
		if _, err := log.AppendBatch(ctx, batch[:n]); err != nil {
			t.Fatal(err)
		}
		batch = batch[n:]
	}
	p := projections.New(log, srv.JS, projections.Options{BucketPrefix: "big_", TurnCacheSize: 10})
	t.Cleanup(func() { p.Close() })
	if err := p.Rebuild(ctx); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	for _, id := range []string{turns[0], turns[2999], turns[5999]} {
		if tu, ok, err := p.Turn(ctx, id); err != nil || !ok || tu.State != lifecycle.StateFailed {
			t.Errorf("turn %s after the rebuild: %+v %v %v; want failed, from KV", id, tu, ok, err)
		}
	}
}

// A catch-up writes an ended turn once: between checkpoints its flushes
// write only the turns that ended, and the open ones (which change again
// within a few events) wait for the end. The turns bucket then holds as
// many writes as turns. The workload is large enough for several flushes
// before the end (one per 4,096 ended turns).
func TestACatchUpWritesEachTurnOnceBetweenCheckpoints(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 31, Events: 40000 / workloadScale})
	if _, err := projectionstest.Play(ctx, e.log, e.js, w.Ops); err != nil {
		t.Fatal(err)
	}
	p := projections.New(e.log, e.js, projections.Options{
		BucketPrefix: "once_", Now: func() time.Time { return w.End },
		// No checkpoint before the end: it would write the open turns.
		CheckpointEvery: 1 << 30, CheckpointInterval: time.Hour,
	})
	t.Cleanup(p.Close)
	if err := p.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := e.js.Stream(ctx, "KV_once_turns")
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	if st.Msgs < 4096/uint64(workloadScale) {
		t.Fatalf("%d turns: too few for a flush before the end", st.Msgs)
	}
	if st.LastSeq != st.Msgs {
		t.Errorf("%d writes for %d turns; want one each", st.LastSeq, st.Msgs)
	}
}

// A first start on a log without a checkpoint folds it from nothing, as a
// rebuild does, and ends with the rebuild's views; it asks the turns
// bucket only about a turn its cache let go of that a queued event names
// again, not about every turn older than the process (that was a KV read
// per turn of the log, a third of a first start on a million events).
func TestAFirstStartFoldsLikeARebuildAndAsksKVOnlyAboutTurnsItLetGo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 41, Events: 4000 / workloadScale})
	now := func() time.Time { return w.End }
	if _, err := projectionstest.Play(ctx, e.log, e.js, w.Ops); err != nil {
		t.Fatal(err)
	}
	// A queued event appended again (a spool replay, a duplicate) is the
	// only one that can name a turn the fold let go of.
	queued, turns := 0, map[string]bool{}
	for _, op := range w.Ops {
		switch op.Event.Data.(type) {
		case events.AgentQueued, events.RoleQueued:
			queued++
			turns[lifecycle.TurnID(op.Event)] = true
		}
	}
	again := queued - len(turns)

	var reads atomic.Int64
	sub, err := e.js.Conn().Subscribe("$JS.API.*.GET.KV_fs_turns.>", func(*nats.Msg) { reads.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	cache := 20 / workloadScale
	first := start(t, projections.New(e.log, e.js, projections.Options{Now: now, BucketPrefix: "fs_", TurnCacheSize: cache}))
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if len(turns) < 10*cache {
		t.Fatalf("%d turns: too few for the cache of %d to let most go", len(turns), cache)
	}
	if n := reads.Load(); n > int64(again) {
		t.Errorf("%d turn reads from KV for %d turns, %d queued events appended again; want at most %d", n, len(turns), again, again)
	}

	rebuilt := projections.New(e.log, e.js, projections.Options{Now: now, BucketPrefix: "rb_", TurnCacheSize: cache})
	t.Cleanup(rebuilt.Close)
	if err := rebuilt.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	rbKV := kvView(t, e.js, "rb_")
	if err := diff("first start KV vs rebuild KV", kvView(t, e.js, "fs_"), rbKV); err != nil {
		t.Fatal(err)
	}
	if err := diff("first start memory vs rebuild memory", memView(t, first, rbKV.turnIDs()), memView(t, rebuilt, rbKV.turnIDs())); err != nil {
		t.Fatal(err)
	}
}
