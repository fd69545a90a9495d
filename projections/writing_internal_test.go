package projections

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// The fold goes on while a flush's writes are in flight (a catch-up, the
// live follow). A turn that ended, went out in that flush and was then
// pushed out of the cache is known only to the flush until the turns
// bucket has it: a queued event re-appended for it meanwhile must find it
// ended there, not open it again. The test holds the write back by
// preparing the flush and doing it only after the re-appended event is
// folded; without the flush's turns being looked at, the KV read misses
// and the turn opens again.
func TestATurnWhoseWriteIsInFlightIsNotOpenedAgain(t *testing.T) {
	ctx := context.Background()
	m, next := openedMaterializer(t, Options{BucketPrefix: "wr_", TurnCacheSize: 1})
	ids := events.NewULIDSource(time.Now)
	ev := func(id, turn string, d events.Data) events.Event {
		if id == "" {
			id = ids()
		}
		return next(id, turn, d)
	}
	turn := func(id string) []events.Event {
		return []events.Event{
			ev(id, id, events.AgentQueued{From: "lead", Text: "t " + id}),
			ev("", id, events.AgentFailed{Reason: events.ReasonCancelled}),
		}
	}
	first := ids()
	fold := func(evs ...events.Event) {
		t.Helper()
		if err := m.fold(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	fold(ev("", "", events.AgentRegistered{Agent: "w1", Host: "h1", Pane: "p1", Role: "w-local", Tier: 2, Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned"}))
	fold(turn(first)...)

	job, ok, err := m.prepare(true)
	if err != nil || !ok {
		t.Fatalf("prepare: %v %v", ok, err)
	}
	// More turns than the agent remembers event ids for (so the
	// re-appended event is not a duplicate by its id) and than the cache
	// holds (so the first is pushed out).
	for range recentIDs {
		fold(turn(ids())...)
	}
	if _, cached := m.cache.get(first); cached {
		t.Fatal("the first turn is still cached; the test needs it pushed out")
	}
	again := turn(first)[0]
	fold(again)
	if err := m.finishFlush(m.do(ctx, job)); err != nil {
		t.Fatal(err)
	}

	if a, _ := m.Agent("w1"); a.QueueDepth != 0 {
		t.Errorf("queue depth %d after the re-appended queued event, want 0 (the ended turn was opened again)", a.QueueDepth)
	}
	got, ok, err := m.Turn(ctx, first)
	if err != nil || !ok || got.State != lifecycle.StateFailed {
		t.Errorf("turn %s: %+v %v %v; want it failed, as written", first, got, ok, err)
	}
	if _, open := m.st.book.Turn(first); open {
		t.Errorf("turn %s is open in the book again", first)
	}
}

// BenchmarkWaitTurnWake is the time from the fold applying a turn's last
// event to its WaitTurn caller running again: the caller is the shim's
// POST /message, so this is on every turn's way back to the lead. The
// fold goes on folding after the wake (the events behind it, a flush);
// the woken caller should not wait for that.
func BenchmarkWaitTurnWake(b *testing.B) {
	ctx := context.Background()
	m := New(nil, nil, Options{Memory: true}).(*materializer)
	ids := events.NewULIDSource(time.Now)
	now := time.Now().UTC()
	seq := uint64(0)
	ev := func(turn string, d events.Data) events.Event {
		seq++
		return events.Event{Seq: seq, ID: ids(), Subject: "w1", CorrelationID: turn, Time: now, Data: d}
	}
	if err := m.fold(ctx, []events.Event{ev("", events.AgentRegistered{Agent: "w1", Host: "h1", Pane: "p1", Role: "w-local", Tier: 2, Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned"})}); err != nil {
		b.Fatal(err)
	}
	// Work the fold does after a wake, as when more events came in.
	busy := func() {
		for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
		}
	}
	var total time.Duration
	for b.Loop() {
		turn := ids()
		q := ev(turn, events.AgentQueued{From: "lead", Text: "t"})
		q.ID = turn
		if err := m.fold(ctx, []events.Event{q}); err != nil {
			b.Fatal(err)
		}
		woke := make(chan time.Time, 1)
		go func() {
			if _, err := m.WaitTurn(ctx, turn, func(t lifecycle.Turn) bool { return t.State.Final() }); err == nil {
				woke <- time.Now()
			}
		}()
		for m.waiting(turn) == 0 {
			runtime.Gosched()
		}
		start := time.Now()
		if err := m.fold(ctx, []events.Event{ev(turn, events.AgentFailed{Reason: events.ReasonCancelled})}); err != nil {
			b.Fatal(err)
		}
		busy()
		total += (<-woke).Sub(start)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/wake")
}

// waiting is how many WaitTurn callers wait on turn id.
func (m *materializer) waiting(id string) int {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if w, ok := m.turnWaiters[id]; ok {
		return w.n
	}
	return 0
}

// A WaitSeq caller is woken once the fold reaches its position and not by
// the events folded before it: a burst of sends, each waiting for its own
// queued event, is otherwise woken by every event of the burst. A caller
// that gives up leaves no waiter behind.
func TestWaitSeqWakesEachCallerAtItsPosition(t *testing.T) {
	m := New(nil, nil, Options{Memory: true}).(*materializer)
	ctx := context.Background()
	returned := make(chan uint64, 3)
	for _, seq := range []uint64{5, 10, 10} {
		go func() {
			if err := m.WaitSeq(ctx, seq); err == nil {
				returned <- seq
			}
		}()
	}
	waiters := func() int {
		m.wmu.Lock()
		defer m.wmu.Unlock()
		return len(m.seqWaiters)
	}
	for waiters() < 3 {
		runtime.Gosched()
	}
	for seq := uint64(1); seq < 5; seq++ {
		m.setApplied(seq)
	}
	if n := waiters(); n != 3 {
		t.Fatalf("%d waiters left before any position was reached, want 3", n)
	}
	m.setApplied(7)
	if got := <-returned; got != 5 {
		t.Fatalf("the waiter for %d returned at 7", got)
	}
	if n := waiters(); n != 2 {
		t.Fatalf("%d waiters left at 7, want the two for 10", n)
	}
	m.setApplied(10)
	<-returned
	<-returned

	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- m.WaitSeq(cctx, 20) }()
	for waiters() < 1 {
		runtime.Gosched()
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled WaitSeq returned nil")
	}
	if n := waiters(); n != 0 {
		t.Errorf("a cancelled WaitSeq left %d waiters", n)
	}
	if err := m.WaitSeq(ctx, 10); err != nil {
		t.Errorf("a position already reached: %v", err)
	}
}

// A flush whose writes fail puts each entry back among the changed ones,
// for the next flush: the agent's row, its session's and the turn as it
// was written. A turn that changed again since is not set back to what
// the failed write held.
func TestFailedWritesStayChanged(t *testing.T) {
	ctx := context.Background()
	m, next := openedMaterializer(t, Options{BucketPrefix: "fw_"})
	ids := events.NewULIDSource(time.Now)
	ev := func(turn string, d events.Data) events.Event {
		id := ids()
		if turn == "*" {
			turn = id
		}
		return next(id, turn, d)
	}
	queued := ev("*", events.AgentQueued{From: "lead", Text: "one"})
	turn := queued.ID
	queued.CorrelationID = ""
	evs := []events.Event{
		ev("", events.AgentRegistered{Agent: "w1", Host: "h1", Pane: "p1", Role: "w-local", Tier: 2, Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned"}),
		ev("", events.AgentSession{SessionID: "s1", Source: "startup"}),
		queued,
	}
	if err := m.fold(ctx, evs); err != nil {
		t.Fatal(err)
	}
	job, ok, err := m.prepare(true)
	if err != nil || !ok {
		t.Fatalf("prepare: %v %v", ok, err)
	}
	views := map[viewKind]int{}
	for _, p := range job.puts {
		views[p.view]++
	}
	if views[viewAgent] != 1 || views[viewTurn] != 1 || views[viewSession] == 0 {
		t.Fatalf("the flush writes %v (by view), want the agent, its session and the turn", views)
	}
	if n := m.dirty.len(); n != 0 {
		t.Fatalf("%d entries still changed after prepare", n)
	}
	// The turn moves on before the failed flush is taken in.
	typed := ev(turn, events.AgentTyped{Pane: "p1", Method: "prompt", Bytes: 3})
	if err := m.fold(ctx, []events.Event{typed}); err != nil {
		t.Fatal(err)
	}
	if err := m.finishFlush(flushResult{failed: job.puts, turns: job.turns}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.dirty.agents["w1"]; !ok {
		t.Error("the agent's row is not changed again after its write failed")
	}
	if len(m.dirty.sessions) == 0 {
		t.Error("the session's row is not changed again after its write failed")
	}
	got, ok := m.dirty.turns[turn]
	if !ok {
		t.Fatal("the turn is not changed again after its write failed")
	}
	if got.State != lifecycle.StateTyped {
		t.Errorf("the turn to write is %s, want typed (the failed write's queued state must not replace the newer one)", got.State)
	}

	// With nothing newer, the turn goes back as the failed write held it.
	job, ok, err = m.prepare(true)
	if err != nil || !ok {
		t.Fatalf("prepare: %v %v", ok, err)
	}
	if err := m.finishFlush(flushResult{failed: job.puts, turns: job.turns}); err != nil {
		t.Fatal(err)
	}
	if got := m.dirty.turns[turn]; got.State != lifecycle.StateTyped || got.ID != turn {
		t.Errorf("the turn back among the changed is %q in state %s, want %q typed", got.ID, got.State, turn)
	}
}

// openedMaterializer is a materializer on a fresh server with its buckets
// open, and next, which makes agent w1's events at the following stream
// positions.
func openedMaterializer(t *testing.T, o Options, server ...natstest.Option) (*materializer, func(id, turn string, d events.Data) events.Event) {
	t.Helper()
	srv := natstest.Start(t, server...)
	log := events.New(srv.JS, events.Options{Source: "fleetd/test/projections"})
	m := New(log, srv.JS, o).(*materializer)
	t.Cleanup(func() { m.Close() })
	if err := m.open(context.Background()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	seq := uint64(0)
	return m, func(id, turn string, d events.Data) events.Event {
		seq++
		return events.Event{Seq: seq, ID: id, Subject: "w1", CorrelationID: turn, Time: now, Data: d}
	}
}

// While the fold catches up, checkpoints come bulkCheckpointInterval
// times further apart in time (and bulkCheckpointSpread in events) than
// live: each one writes every agent's and session's row.
func TestCatchUpSpacesCheckpointsOut(t *testing.T) {
	m := &materializer{o: Options{CheckpointEvery: 1000, CheckpointInterval: time.Second}}
	cases := []struct {
		bulk  bool
		since time.Duration
		after int
		due   bool
	}{
		{bulk: false, since: 2 * time.Second, due: true},
		{bulk: true, since: 2 * time.Second, due: false},
		{bulk: true, since: (bulkCheckpointInterval + 1) * time.Second, due: true},
		{bulk: false, after: 1000, due: true},
		{bulk: true, after: 1000, due: false},
		{bulk: true, after: 1000 * bulkCheckpointSpread, due: true},
	}
	for _, c := range cases {
		m.bulk, m.ckptAt, m.sinceCkpt = c.bulk, time.Now().Add(-c.since), c.after
		if got := m.checkpointDue(); got != c.due {
			t.Errorf("bulk %v, %s and %d events since the last checkpoint: due %v, want %v", c.bulk, c.since, c.after, got, c.due)
		}
	}
}

// A one-replica bucket's writes go as one atomic batch from eight on, and
// one by one below: on a one-replica bucket a batch costs more than a few
// synced puts. A replicated bucket batches from two.
func TestFewViewWritesGoOneByOne(t *testing.T) {
	ctx := context.Background()
	m, _ := openedMaterializer(t, Options{BucketPrefix: "mb_", BatchWrites: true})
	roster := bucketNames(m.o)[0]
	batchOf := func(name string) string {
		t.Helper()
		st, err := m.js.Stream(ctx, "KV_"+roster)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := st.GetLastMsgForSubject(ctx, "$KV."+roster+"."+Key(name))
		if err != nil {
			t.Fatal(err)
		}
		return msg.Header.Get(hdrBatchID)
	}
	write := func(prefix string, n int) []string {
		t.Helper()
		var puts []put
		var names []string
		for i := range n {
			name := prefix + strconv.Itoa(i)
			names = append(names, name)
			puts = append(puts, put{bucket: roster, name: name, data: []byte(`{}`), view: viewAgent})
		}
		if failed, err := m.write(ctx, puts, nil); err != nil || len(failed) > 0 {
			t.Fatalf("write %d: %d failed: %v", n, len(failed), err)
		}
		return names
	}
	for _, name := range write("few-", 7) {
		if id := batchOf(name); id != "" {
			t.Errorf("%s of 7 writes stored in batch %q, want alone", name, id)
		}
	}
	names := write("many-", 8)
	first := batchOf(names[0])
	for _, name := range names {
		if id := batchOf(name); id == "" || id != first {
			t.Errorf("%s of 8 writes stored in batch %q, the first in %q: want one batch", name, id, first)
		}
	}
	if got := (Options{Replicas: 3}).minBatch(); got != 2 {
		t.Errorf("a replicated bucket batches from %d writes, want 2", got)
	}
}

// A flush of more writes to a bucket than nats-server's default batch
// limit goes as one batch to a server that takes them (fleetd's embedded
// one), and in batches of that default size to one that does not: none
// is lost, none goes one by one.
func TestLargeFlushesGoInBatchesTheServerTakes(t *testing.T) {
	ctx := context.Background()
	strict := filepath.Join(t.TempDir(), "strict.conf")
	if err := os.WriteFile(strict, []byte("jetstream { limits { batch { max_msgs: 1000 } } }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		server  []natstest.Option
		batches int
	}{
		{"embedded", nil, 1},
		{"default limit", []natstest.Option{natstest.WithConfig(func(c *embeddednats.Config) { c.ConfigFile = strict })}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := openedMaterializer(t, Options{BucketPrefix: "lb_", BatchWrites: true, MaxBatch: embeddednats.MaxAtomicBatch}, c.server...)
			roster := bucketNames(m.o)[0]
			puts := make([]put, 2500)
			for i := range puts {
				puts[i] = put{bucket: roster, name: "a-" + strconv.Itoa(i), data: []byte(`{"n":` + strconv.Itoa(i) + `}`), view: viewAgent}
			}
			if failed, err := m.write(ctx, puts, nil); err != nil || len(failed) > 0 {
				t.Fatalf("write 2,500: %d failed: %v", len(failed), err)
			}
			st, err := m.js.Stream(ctx, "KV_"+roster)
			if err != nil {
				t.Fatal(err)
			}
			batches := map[string]int{}
			for i, p := range puts {
				msg, err := st.GetLastMsgForSubject(ctx, "$KV."+roster+"."+Key(p.name))
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				if want := `{"n":` + strconv.Itoa(i) + `}`; string(msg.Data) != want {
					t.Fatalf("%s holds %s, want %s", p.name, msg.Data, want)
				}
				batches[msg.Header.Get(hdrBatchID)]++
			}
			if batches[""] > 0 || len(batches) != c.batches {
				t.Errorf("2,500 writes stored in batches %v (\"\": alone), want %d batch(es)", batches, c.batches)
			}
		})
	}
}

// A checkpoint's chunks go to the slot its head does not name, in one
// atomic batch, beside the flush's entries; its head follows alone, once
// they and every entry are written. When an entry fails, the head stays:
// the checkpoint read back is still the one before.
func TestACheckpointsHeadFollowsItsChunksAndEntries(t *testing.T) {
	ctx := context.Background()
	m, _ := openedMaterializer(t, Options{BucketPrefix: "ck_", BatchWrites: true})
	// Enough rows for a checkpoint of several chunks.
	for i := range 3000 {
		id := "a-" + strconv.Itoa(i)
		m.st.agents[id] = &agentRow{Agent: Agent{Agent: id, Host: "h1", Role: strings.Repeat("r", 400)}, Registered: true}
	}
	checkpoint := func(seq uint64, puts []put) flushResult {
		t.Helper()
		m.applied.Store(seq)
		c, err := m.encodeCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		return m.do(ctx, flushJob{puts: puts, ckpt: c})
	}
	if r := checkpoint(7, nil); r.err != nil || r.ckpt == nil {
		t.Fatalf("checkpoint at 7: written %v, err %v", r.ckpt != nil, r.err)
	} else if err := m.finishFlush(r); err != nil {
		t.Fatal(err)
	}
	st, err := m.js.Stream(ctx, "KV_"+bucketNames(m.o)[3])
	if err != nil {
		t.Fatal(err)
	}
	head, err := st.GetLastMsgForSubject(ctx, "$KV."+bucketNames(m.o)[3]+"."+CheckpointKey)
	if err != nil {
		t.Fatal(err)
	}
	var h checkpointHead
	if err := json.Unmarshal(head.Data, &h); err != nil {
		t.Fatal(err)
	}
	if h.Chunks < 2 {
		t.Fatalf("the checkpoint has %d chunk(s), want several", h.Chunks)
	}
	if id := head.Header.Get(hdrBatchID); id != "" {
		t.Errorf("the head was written in batch %q, want alone", id)
	}
	ids := map[string]bool{}
	for n := range h.Chunks {
		chunk, err := st.GetLastMsgForSubject(ctx, "$KV."+bucketNames(m.o)[3]+"."+chunkKey(h.Slot, n))
		if err != nil {
			t.Fatal(err)
		}
		ids[chunk.Header.Get(hdrBatchID)] = true
	}
	if len(ids) != 1 || ids[""] {
		t.Errorf("the %d chunks were written in batches %v, want one", h.Chunks, ids)
	}

	// An entry that cannot be written (no such bucket) keeps the head
	// where it was, though the new chunks were written.
	bad := put{bucket: "ck_nosuch", name: "x", data: []byte(`{}`), view: viewAgent}
	if r := checkpoint(9, []put{bad}); r.err == nil || r.ckpt != nil {
		t.Fatalf("checkpoint at 9 with a failed entry: written %v, err %v", r.ckpt != nil, r.err)
	}
	snap, err := m.loadCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap == nil {
		t.Fatal("no checkpoint read back after the failed flush, want the one at 7")
	}
	if snap.Seq != 7 || len(snap.Agents) != 3000 {
		t.Errorf("the checkpoint read back after the failed flush is at %d with %d agents, want at 7 with 3000", snap.Seq, len(snap.Agents))
	}
}
