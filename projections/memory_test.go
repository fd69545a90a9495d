package projections_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

// The memory fold is the materialized one without KV: over a workload
// full of duplicates, orphans and junk, folding live or after the fact,
// it shows exactly what the materialized projection writes, and Rebuild
// gives it again.
func TestMemoryFoldEqualsTheMaterializedFold(t *testing.T) {
	e := newEnv(t)
	w := projectionstest.Generate(projectionstest.Config{Seed: 7, Events: 6000 / workloadScale})
	now := func() time.Time { return w.End }
	live := start(t, projections.New(e.log, e.js, projections.Options{Now: now, FlushInterval: 20 * time.Millisecond}))
	mem := start(t, projections.New(e.log, nil, projections.Options{Memory: true, Now: now}))

	last, err := projectionstest.Play(context.Background(), e.log, e.js, w.Ops)
	if err != nil {
		t.Fatal(err)
	}
	waitSeq(t, live, last)
	waitSeq(t, mem, last)
	if err := live.stop(); err != nil {
		t.Fatalf("live run: %v", err)
	}
	liveKV := kvView(t, e.js, "fleet_")
	if len(liveKV.Roster) != 20 || len(liveKV.Turns) < 300/workloadScale {
		t.Fatalf("workload too thin: %d agents, %d turns", len(liveKV.Roster), len(liveKV.Turns))
	}
	if err := diff("memory (live) vs KV", memView(t, mem, liveKV.turnIDs()), liveKV); err != nil {
		t.Fatal(err)
	}
	checkTokens(t, "memory", memView(t, mem, nil), tokenOracle(w.Ops))

	after := start(t, projections.New(e.log, nil, projections.Options{Memory: true, Now: now}))
	waitSeq(t, after, last)
	if err := diff("memory (after) vs KV", memView(t, after, liveKV.turnIDs()), liveKV); err != nil {
		t.Fatal(err)
	}

	if err := mem.stop(); err != nil {
		t.Fatal(err)
	}
	rb := projections.New(e.log, nil, projections.Options{Memory: true, Now: now})
	if err := rb.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := diff("memory rebuild vs KV", memView(t, rb, liveKV.turnIDs()), liveKV); err != nil {
		t.Fatal(err)
	}
}

// A memory fold given a JetStream starts from the projection's checkpoint
// when it can read it, reads back from the turns bucket what ended before
// it, and writes nothing: no bucket, no entry, no checkpoint.
func TestMemoryFoldStartsFromTheCheckpointAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 5, Events: 3000 / workloadScale})
	now := func() time.Time { return w.End }
	half := len(w.Ops) / 2

	gw := start(t, projections.New(e.log, e.js, projections.Options{Now: now, TurnCacheSize: 20}))
	last, err := projectionstest.Play(ctx, e.log, e.js, w.Ops[:half])
	if err != nil {
		t.Fatal(err)
	}
	waitSeq(t, gw, last)
	if err := gw.stop(); err != nil {
		t.Fatal(err)
	}
	ckpt := gw.Horizon().Checkpoint
	if ckpt != last {
		t.Fatalf("the gateway's last checkpoint is at %d, want %d", ckpt, last)
	}
	if last, err = projectionstest.Play(ctx, e.log, e.js, w.Ops[half:]); err != nil {
		t.Fatal(err)
	}
	before := kvStreams(t, e.js)

	mem := start(t, projections.New(e.log, e.js, projections.Options{Memory: true, Now: now}))
	if got := mem.Horizon().Checkpoint; got != ckpt {
		t.Errorf("memory fold started from checkpoint %d, want %d", got, ckpt)
	}
	waitSeq(t, mem, last)

	want := projections.New(e.log, e.js, projections.Options{Now: now, BucketPrefix: "rb_"})
	if err := want.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	wantKV := kvView(t, e.js, "rb_")
	if err := diff("memory from the checkpoint vs a rebuild", memView(t, mem, wantKV.turnIDs()), wantKV); err != nil {
		t.Fatal(err)
	}
	if err := mem.stop(); err != nil {
		t.Fatal(err)
	}
	after := kvStreams(t, e.js)
	delete(after, "KV_rb_roster")
	delete(after, "KV_rb_sessions")
	delete(after, "KV_rb_turns")
	delete(after, "KV_rb_checkpoints")
	if len(after) != len(before) {
		t.Errorf("buckets before %v, after %v", before, after)
	}
	for name, seq := range before {
		if after[name] != seq {
			t.Errorf("%s: last sequence %d, was %d: the memory fold wrote to it", name, after[name], seq)
		}
	}
}

// Without buckets a memory fold creates none, and without Memory a
// projection needs a JetStream.
func TestMemoryFoldCreatesNoBuckets(t *testing.T) {
	e := newEnv(t)
	mem := start(t, projections.New(e.log, e.js, projections.Options{Memory: true}))
	ack := e.append(t, reg("w1", "h1", ""))
	waitSeq(t, mem, ack.Seq)
	if _, ok := mem.Agent("w1"); !ok {
		t.Fatal("w1 not folded")
	}
	if err := mem.stop(); err != nil {
		t.Fatal(err)
	}
	if got := kvStreams(t, e.js); len(got) != 0 {
		t.Errorf("a memory fold created %v", got)
	}
	if err := projections.New(e.log, nil, projections.Options{}).Run(context.Background()); !errors.Is(err, projections.ErrInvalidOptions) {
		t.Errorf("a materialized projection without JetStream: %v, want ErrInvalidOptions", err)
	}
}

// kvStreams maps every KV bucket's stream to its last sequence.
func kvStreams(t testing.TB, js jetstream.JetStream) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	names := js.StreamNames(context.Background())
	for name := range names.Name() {
		if !strings.HasPrefix(name, "KV_") {
			continue
		}
		s, err := js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s.CachedInfo().State.LastSeq
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
