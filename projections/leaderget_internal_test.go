package projections

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// silentKV is a bucket whose direct gets nobody answers, as when the
// replica they are routed to is a frozen process whose routes have not
// timed out yet.
type silentKV struct{ jetstream.KeyValue }

func (silentKV) Get(ctx context.Context, _ string) (jetstream.KeyValueEntry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A read the replicas do not answer is asked of the stream's leader, and
// reads there as it would directly: a value, nothing for a key never
// written, deleted or expired. Without it the fold waited out every try
// and the gateway's views stood still.
func TestAGetNoReplicaAnswersIsAskedOfTheStreamLeader(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	kv, err := srv.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "fleet_turns", History: 1, LimitMarkerTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{"kept": `{"id":"kept"}`, "deleted": `{}`} {
		if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "deleted"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "expired", []byte(`{}`), jetstream.KeyTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if _, err := kv.Get(ctx, "expired"); err == nil {
			return context.DeadlineExceeded // not expired yet
		}
		return nil
	})

	b := &buckets{nc: srv.NC}
	for _, tc := range []struct {
		key, want string
		found     bool
	}{{"kept", `{"id":"kept"}`, true}, {"deleted", "", false}, {"expired", "", false}, {"never", "", false}} {
		start := time.Now()
		value, found, err := b.latest(ctx, silentKV{kv}, tc.key)
		if err != nil || found != tc.found || string(value) != tc.want {
			t.Errorf("%s: %q, %v, %v; want %q, %v", tc.key, value, found, err, tc.want, tc.found)
		}
		if took := time.Since(start); took < directWait {
			t.Errorf("%s: answered in %v, before the direct get was given up", tc.key, took)
		}
	}
	// A caller's deadline still bounds the whole read.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, _, err := b.latest(short, silentKV{kv}, "kept"); err == nil {
		t.Error("a read past its caller's deadline succeeded")
	}
}

// A gateway starting while the replica nearest it is frozen reads its
// checkpoint from the stream's leader too: head and chunks alike.
func TestACheckpointNoReplicaAnswersIsReadFromTheStreamLeader(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	kv, err := srv.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "fleet_checkpoints"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := encode(snapshot{Seq: 42})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := json.Marshal(checkpointHead{Seq: 42, Slot: 1, Chunks: 1, Bytes: len(data), Time: time.Now()})
	for key, value := range map[string][]byte{chunkKey(1, 0): data, CheckpointKey: head} {
		if _, err := kv.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	m := &materializer{o: Options{Timeout: 10 * time.Second, Memory: true}}
	m.kvb.Store(&buckets{nc: srv.NC, checkpoints: silentKV{kv}})
	snap, err := m.loadCheckpoint(ctx)
	if err != nil || snap == nil || snap.Seq != 42 || m.slot != 1 {
		t.Fatalf("loaded %+v (slot %d), %v; want the checkpoint at 42 in slot 1", snap, m.slot, err)
	}
}
