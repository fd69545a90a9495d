package events

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// coalescing starts a log with CoalesceAppends on a server that syncs
// every write, and holds its coalescer busy, as if a publish were in
// flight, so the appends a test makes queue until it calls release. Two
// queued appends make a batch here, so the tests' few events take the
// batch path (the default wants minCoalesced).
func coalescing(t *testing.T) (l *jsLog, release func()) {
	t.Helper()
	srv := natstest.Start(t, natstest.WithSyncAlways())
	if _, err := EnsureStream(context.Background(), srv.JS, StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	l = New(srv.JS, Options{Source: "fleetd/test/coalesce", CoalesceAppends: true}).(*jsLog)
	l.co.min = 2
	l.co.busy = true
	return l, l.co.next
}

// appendAll appends each event from its own goroutine once the coalescer
// holds them all queued, then releases it; it returns each append's ack
// and error, in the events' order.
func appendAll(t *testing.T, l *jsLog, release func(), evs []Event, opts [][]AppendOption) ([]Ack, []error) {
	t.Helper()
	acks, errs := make([]Ack, len(evs)), make([]error, len(evs))
	var wg sync.WaitGroup
	for i := range evs {
		wg.Go(func() { acks[i], errs[i] = l.Append(context.Background(), evs[i], opts[i]...) })
		// One at a time, so the queue holds them in this order.
		checkfor.Eventually(t, 10*time.Second, time.Millisecond, func() error {
			l.co.mu.Lock()
			defer l.co.mu.Unlock()
			if len(l.co.queue) != i+1 {
				return errors.New("not queued yet")
			}
			return nil
		})
	}
	release()
	wg.Wait()
	return acks, errs
}

// appendIdle appends ev with nothing in flight, then holds the coalescer
// busy again.
func appendIdle(t *testing.T, l *jsLog, ev Event) Ack {
	t.Helper()
	l.co.mu.Lock()
	l.co.busy = false
	l.co.mu.Unlock()
	ack, err := l.Append(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	l.co.mu.Lock()
	l.co.busy = true
	l.co.mu.Unlock()
	return ack
}

// batchOf is the id of the atomic batch that stored the message at seq,
// "" when it was stored alone.
func batchOf(t *testing.T, l *jsLog, seq uint64) string {
	t.Helper()
	st, err := l.js.Stream(context.Background(), Stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return m.Header.Get("Nats-Batch-Id")
}

// storedAt reads back the event at seq.
func storedAt(t *testing.T, l *jsLog, seq uint64) Event {
	t.Helper()
	for ev, err := range l.Read(context.Background(), Query{FromSeq: seq}) {
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	t.Fatalf("nothing stored at %d", seq)
	return Event{}
}

// waitIdle waits until the coalescer has sent everything queued and is
// no longer busy.
func waitIdle(t *testing.T, l *jsLog) {
	t.Helper()
	checkfor.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		l.co.mu.Lock()
		defer l.co.mu.Unlock()
		if l.co.busy {
			return errors.New("the coalescer is still busy with nothing queued")
		}
		return nil
	})
}

func status(agent, detail string) Event {
	return Event{Subject: agent, Data: AgentStatusChanged{Status: StatusWorking, Source: "hook", Detail: detail}}
}

// Appends that queue behind one in flight are stored together, as one
// atomic batch, and each caller's ack is its own event's place.
func TestAppendsQueuedBehindOneInFlightAreStoredAsOneBatch(t *testing.T) {
	l, release := coalescing(t)
	var evs []Event
	for i := range 12 {
		evs = append(evs, status("w"+string(rune('a'+i%3)), string(rune('A'+i))))
	}
	acks, errs := appendAll(t, l, release, evs, make([][]AppendOption, len(evs)))
	seqs := map[uint64]bool{}
	for i, ack := range acks {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		if seqs[ack.Seq] {
			t.Fatalf("two appends acked at seq %d", ack.Seq)
		}
		seqs[ack.Seq] = true
		if got := storedAt(t, l, ack.Seq); got.ID != ack.ID || got.Data.(AgentStatusChanged).Detail != evs[i].Data.(AgentStatusChanged).Detail {
			t.Errorf("append %d acked at %d, which holds %s, not its event %s", i, ack.Seq, got.ID, ack.ID)
		}
		if i > 0 && ack.Seq != acks[i-1].Seq+1 {
			t.Errorf("append %d at %d after %d: a batch stores them together, in the order they queued", i, ack.Seq, acks[i-1].Seq)
		}
	}
	// The server keeps a batch's id on each message it stored.
	batch := batchOf(t, l, acks[0].Seq)
	for i, ack := range acks {
		if id := batchOf(t, l, ack.Seq); id == "" || id != batch {
			t.Errorf("append %d stored in batch %q, the first in %q: want all in one", i, id, batch)
		}
	}
	waitIdle(t, l)
}

// Fewer queued appends than make a batch worth its cost (minCoalesced)
// go one by one, each in the order it queued; as many go as one batch.
func TestFewQueuedAppendsGoOneByOne(t *testing.T) {
	l, release := coalescing(t)
	if got := New(l.js, Options{CoalesceAppends: true}).(*jsLog).co.min; got != minCoalesced {
		t.Fatalf("a coalescing log batches from %d appends by default, want %d", got, minCoalesced)
	}
	if got := New(l.js, Options{CoalesceAppends: true, CoalesceMin: 2}).(*jsLog).co.min; got != 2 {
		t.Errorf("CoalesceMin 2 batches from %d appends", got)
	}
	l.co.min = minCoalesced
	var few []Event
	for i := range minCoalesced - 1 {
		few = append(few, status("w1", string(rune('a'+i))))
	}
	acks, errs := appendAll(t, l, release, few, make([][]AppendOption, len(few)))
	for i, ack := range acks {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		if id := batchOf(t, l, ack.Seq); id != "" {
			t.Errorf("append %d of %d queued stored in batch %q, want alone", i, len(few), id)
		}
		if i > 0 && ack.Seq <= acks[i-1].Seq {
			t.Errorf("append %d at %d, before %d: want the order they queued", i, ack.Seq, acks[i-1].Seq)
		}
	}
	waitIdle(t, l)
	l.co.mu.Lock()
	l.co.busy = true
	l.co.mu.Unlock()
	var enough []Event
	for i := range minCoalesced {
		enough = append(enough, status("w2", string(rune('a'+i))))
	}
	acks, errs = appendAll(t, l, release, enough, make([][]AppendOption, len(enough)))
	batch := ""
	for i, ack := range acks {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		id := batchOf(t, l, ack.Seq)
		if i == 0 {
			batch = id
		}
		if id == "" || id != batch {
			t.Errorf("append %d of %d queued stored in batch %q, the first in %q: want all in one", i, len(enough), id, batch)
		}
	}
}

// A batch one of whose events fails its guard is refused whole; its
// events then go one by one, so the guard fails for that event alone,
// and an event stored before (a retry) is acked as the duplicate it is.
func TestARefusedBatchFallsBackToOneByOne(t *testing.T) {
	l, release := coalescing(t)
	stored := appendIdle(t, l, status("w1", "stored before"))
	retry := status("w1", "stored before")
	retry.ID = stored.ID
	evs := []Event{status("w2", "first"), status("w3", "guarded"), status("w3", "guarded too"), retry, status("w2", "last")}
	opts := [][]AppendOption{nil, {ExpectLastSeq(0)}, {ExpectLastSeq(0)}, nil, nil}
	acks, errs := appendAll(t, l, release, evs, opts)
	for _, i := range []int{0, 1, 4} {
		if errs[i] != nil {
			t.Errorf("append %d: %v, want it stored", i, errs[i])
		}
	}
	if !errors.Is(errs[2], ErrConcurrency) {
		t.Errorf("second append guarded on an empty w3: %v, want ErrConcurrency", errs[2])
	}
	if errs[3] != nil || !acks[3].Duplicate || acks[3].Seq != stored.Seq {
		t.Errorf("the retry: %+v, %v; want the duplicate of seq %d", acks[3], errs[3], stored.Seq)
	}
	for _, i := range []int{0, 1, 4} {
		if got := storedAt(t, l, acks[i].Seq); got.ID != acks[i].ID {
			t.Errorf("append %d acked at %d, which holds %s", i, acks[i].Seq, got.ID)
		}
	}
}

// A guard covers what came before it, in a batch too: an event queued
// ahead of a guarded one on the same agent is stored first, and the
// guarded one then fails as it would alone — it is not slipped into the
// same batch, where the server would check it against the log as it was
// before the batch.
func TestAGuardedAppendSeesTheEventsQueuedAheadOfIt(t *testing.T) {
	l, release := coalescing(t)
	first := appendIdle(t, l, status("w1", "before"))
	evs := []Event{status("w2", "other"), status("w1", "between"), status("w1", "guarded")}
	opts := [][]AppendOption{nil, nil, {ExpectLastSeqFor(first.Seq, "fleet.agent.w1.>")}}
	_, errs := appendAll(t, l, release, evs, opts)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("unguarded appends: %v", errs)
	}
	if !errors.Is(errs[2], ErrConcurrency) {
		t.Errorf("guarded on w1's last event %d with another queued ahead of it: %v, want ErrConcurrency", first.Seq, errs[2])
	}
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		filter, subject string
		want            bool
	}{
		{"fleet.agent.w1.>", "fleet.agent.w1.status", true},
		{"fleet.agent.w1.>", "fleet.agent.w1", false},
		{"fleet.agent.w1.>", "fleet.agent.w10.status", false},
		{"fleet.agent.*.status", "fleet.agent.w1.status", true},
		{"fleet.agent.*.status", "fleet.agent.w1.typed", false},
		{"fleet.agent.w1.status", "fleet.agent.w1.status", true},
		{"fleet.agent.w1.status", "fleet.agent.w1.status.x", false},
		{">", "fleet", true},
	} {
		if got := subjectMatches(tc.filter, tc.subject); got != tc.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tc.filter, tc.subject, got, tc.want)
		}
	}
}

// On a stream that takes no atomic batches (made before fleetd asked for
// them), the queued appends are stored one by one, and later ones are no
// longer tried as batches.
func TestWithoutAtomicBatchesAppendsGoOneByOne(t *testing.T) {
	l, release := coalescing(t)
	cfg := StreamConfig(StreamOptions{})
	cfg.AllowAtomicPublish = false
	if _, err := l.js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	evs := []Event{status("w1", "a"), status("w2", "b"), status("w3", "c")}
	acks, errs := appendAll(t, l, release, evs, make([][]AppendOption, len(evs)))
	for i := range evs {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		if got := storedAt(t, l, acks[i].Seq); got.ID != acks[i].ID {
			t.Errorf("append %d acked at %d, which holds %s", i, acks[i].Seq, got.ID)
		}
	}
	for i := range evs {
		if id := batchOf(t, l, acks[i].Seq); id != "" {
			t.Errorf("append %d stored in batch %q, want alone", i, id)
		}
	}
	if !l.co.off.Load() {
		t.Error("batches are still tried on a stream that refused them")
	}
}
