package projections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

// On a store that syncs every write, a rebuild writes its views in atomic
// batches; what lands in KV is exactly what one-by-one writes leave.
func TestBatchedViewWritesLeaveWhatOneByOneWritesDo(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/projections"}, natstest.WithSyncAlways())
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 5, Events: 4000 / workloadScale})
	if _, err := projectionstest.Play(ctx, log, srv.JS, w.Ops); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return w.End }
	for _, o := range []projections.Options{
		{Now: now, BucketPrefix: "one_"},
		{Now: now, BucketPrefix: "bat_", BatchWrites: true},
	} {
		p := projections.New(log, srv.JS, o)
		if err := p.Rebuild(ctx); err != nil {
			t.Fatalf("rebuild %s: %v", o.BucketPrefix, err)
		}
		p.Close()
	}
	one, bat := kvView(t, srv.JS, "one_"), kvView(t, srv.JS, "bat_")
	if len(one.Turns) < 100/workloadScale {
		t.Fatalf("workload too thin: %d turns", len(one.Turns))
	}
	if err := diff("batched vs one by one", bat, one); err != nil {
		t.Fatal(err)
	}
	var turnID string
	for id := range bat.Turns {
		turnID = id
		break
	}
	for prefix, want := range map[string]bool{"one_": false, "bat_": true} {
		st, err := srv.JS.Stream(ctx, "KV_"+prefix+"turns")
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CachedInfo().Config.AllowAtomicPublish; got != want {
			t.Errorf("%sturns allows atomic batches: %v, want %v", prefix, got, want)
		}
		// The entries themselves say how they were written.
		m, err := st.GetLastMsgForSubject(ctx, "$KV."+prefix+"turns."+projections.Key(turnID))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get("Nats-Batch-Id") != ""; got != want {
			t.Errorf("%sturns/%s written in a batch: %v, want %v", prefix, turnID, got, want)
		}
		// The checkpoint's chunks are one batch when there are several;
		// its head is written alone, after them and the entries.
		ck, err := srv.JS.Stream(ctx, "KV_"+prefix+"checkpoints")
		if err != nil {
			t.Fatal(err)
		}
		head, err := ck.GetLastMsgForSubject(ctx, "$KV."+prefix+"checkpoints."+projections.CheckpointKey)
		if err != nil {
			t.Fatal(err)
		}
		var h struct{ Slot, Chunks int }
		if err := json.Unmarshal(head.Data, &h); err != nil {
			t.Fatal(err)
		}
		if id := head.Header.Get("Nats-Batch-Id"); id != "" {
			t.Errorf("%scheckpoints: head written in batch %q, want alone", prefix, id)
		}
		ids := map[string]bool{}
		for n := range h.Chunks {
			chunk, err := ck.GetLastMsgForSubject(ctx, "$KV."+prefix+"checkpoints."+projections.CheckpointKey+"."+strconv.Itoa(h.Slot)+"."+strconv.Itoa(n))
			if err != nil {
				t.Fatal(err)
			}
			ids[chunk.Header.Get("Nats-Batch-Id")] = true
		}
		if got := len(ids) == 1 && !ids[""]; h.Chunks > 1 && got != want {
			t.Errorf("%scheckpoints: its %d chunks written in one batch: %v, want %v", prefix, h.Chunks, got, want)
		}
	}
}

// A batch the server refuses (here: someone turned atomic batches off on
// the turns and checkpoints buckets after the projection opened them)
// loses nothing: its writes go again one by one.
func TestARefusedBatchOfViewWritesIsWrittenOneByOne(t *testing.T) {
	e := newEnv(t)
	start(t, projections.New(e.log, e.js, projections.Options{BatchWrites: true, FlushInterval: 50 * time.Millisecond}))
	ctx := context.Background()
	for _, bucket := range []string{projections.BucketTurns, projections.BucketCheckpoints} {
		st, err := e.js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		if !cfg.AllowAtomicPublish {
			t.Fatalf("the projection did not allow atomic batches on its bucket %s", bucket)
		}
		cfg.AllowAtomicPublish = false
		if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	ids := events.NewULIDSource(time.Now)
	batch := []events.Event{reg("w1", "h1", "")}
	var turns []string
	for i := range 200 {
		id := ids()
		turns = append(turns, id)
		batch = append(batch, queued("w1", id, fmt.Sprint("t", i)))
	}
	if _, err := e.log.AppendBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, id := range turns {
			tu, err := kvGet[lifecycle.Turn](e.js, projections.BucketTurns, id)
			if err != nil || tu.State != lifecycle.StateQueued {
				return fmt.Errorf("turn %s in KV: %+v %v", id, tu, err)
			}
		}
		// The checkpoint, refused as a batch, is written piece by piece.
		head, err := kvGet[struct{ Seq uint64 }](e.js, projections.BucketCheckpoints, projections.CheckpointKey)
		if err != nil || head.Seq < uint64(len(batch)) {
			return fmt.Errorf("checkpoint head: %+v %v; want one at #%d or later", head, err, len(batch))
		}
		return nil
	})
}

// A projection that keeps the streams as they are (a gateway key, which
// may not edit them) uses batches only where a bucket takes them already:
// it never asks, and still writes its views.
func TestAProjectionThatKeepsTheStreamsNeverEditsThem(t *testing.T) {
	ctx := context.Background()
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/projections"})
			if _, err := log.Append(ctx, events.Event{Subject: "w1", Data: events.AgentRegistered{Agent: "w1", Host: "h1", Pane: "p1"}}); err != nil {
				t.Fatal(err)
			}
			p := projections.New(log, srv.JS, projections.Options{BatchWrites: true, KeepStreams: keep})
			t.Cleanup(func() { p.Close() })
			if err := p.Rebuild(ctx); err != nil {
				t.Fatal(err)
			}
			if len(p.Roster()) != 1 {
				t.Fatalf("roster %v", p.Roster())
			}
			for _, b := range projections.Buckets() {
				st, err := srv.JS.Stream(ctx, "KV_"+b)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.CachedInfo().Config.AllowAtomicPublish; got == keep {
					t.Errorf("%s: atomic batches %v with KeepStreams %v", b, got, keep)
				}
			}
		})
	}
}
