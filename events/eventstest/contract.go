package eventstest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
)

// Harness is what the contract needs from an implementation under test.
type Harness struct {
	// Log is a fresh, empty log.
	Log events.Log
	// PublishRaw puts arbitrary bytes on a subject the log reads, the way
	// any NATS client can, so the suite can feed it junk.
	PublishRaw func(subject string, data []byte) error
}

// TestLog runs the Log contract. newHarness must return an empty log each
// time it is called.
func TestLog(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Run("every event type round-trips", func(t *testing.T) { testRoundTrip(t, newHarness(t)) })
	t.Run("an event appended twice is stored once", func(t *testing.T) { testDedupe(t, newHarness(t)) })
	t.Run("concurrent appends with one expected seq: one wins", func(t *testing.T) { testConcurrency(t, newHarness(t)) })
	t.Run("junk on fleet subjects is skipped and counted", func(t *testing.T) { testJunk(t, newHarness(t)) })
	t.Run("reads filter by subject and start point", func(t *testing.T) { testFilters(t, newHarness(t)) })
	t.Run("follow delivers history then live events", func(t *testing.T) { testFollow(t, newHarness(t)) })
	t.Run("a batch is stored whole and in order", func(t *testing.T) { testBatch(t, newHarness(t)) })
	t.Run("many are stored in order, once; none when one is invalid, the others when one cannot be encoded", func(t *testing.T) { testMany(t, newHarness(t)) })
	t.Run("invalid tokens are refused before anything is stored", func(t *testing.T) { testInvalid(t, newHarness(t)) })
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// ReadAll collects every event a query yields, failing the test on error.
func ReadAll(t testing.TB, l events.Log, q events.Query) []events.Event {
	t.Helper()
	out, err := Collect(context.Background(), l, q)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

// Collect is every event a query yields within ctx, and the error that
// ended the read early, with what came before it.
func Collect(ctx context.Context, l events.Log, q events.Query) ([]events.Event, error) {
	var out []events.Event
	for ev, err := range l.Read(ctx, q) {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func testRoundTrip(t *testing.T, h Harness) {
	samples := Samples("w-claude-1")
	if got, want := len(samples), len(events.NewRegistry().Types()); got != want {
		t.Fatalf("samples cover %d types, registry has %d", got, want)
	}
	for _, ev := range samples {
		if _, err := h.Log.Append(ctx(t), ev); err != nil {
			t.Fatalf("append %s: %v", ev.Type(), err)
		}
	}
	got := ReadAll(t, h.Log, events.Query{})
	if len(got) != len(samples) {
		t.Fatalf("read %d events, want %d", len(got), len(samples))
	}
	var prev uint64
	for i, ev := range got {
		want := samples[i]
		if ev.Type() != want.Type() || ev.Subject != want.Subject || ev.CorrelationID != want.CorrelationID {
			t.Errorf("event %d: got %s/%s/%s, want %s/%s/%s", i, ev.Type(), ev.Subject, ev.CorrelationID, want.Type(), want.Subject, want.CorrelationID)
		}
		if !reflect.DeepEqual(normalize(ev.Data), normalize(want.Data)) {
			t.Errorf("%s data: got %+v, want %+v", ev.Type(), ev.Data, want.Data)
		}
		if ev.ID == "" || ev.Time.IsZero() || ev.Source == "" || ev.Seq <= prev {
			t.Errorf("%s: id %q time %v source %q seq %d (prev %d)", ev.Type(), ev.ID, ev.Time, ev.Source, ev.Seq, prev)
		}
		prev = ev.Seq
	}
}

// normalize drops monotonic clock readings and locations so decoded times
// compare equal to the originals.
func normalize(d events.Data) string { return fmt.Sprintf("%#v", d) }

func testDedupe(t *testing.T, h Harness) {
	ev := events.Event{ID: events.NewULIDSource(time.Now)(), Subject: "a1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}}
	first, err := h.Log.Append(ctx(t), ev)
	if err != nil {
		t.Fatal(err)
	}
	second, err := h.Log.Append(ctx(t), ev)
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !second.Duplicate || second.Seq != first.Seq {
		t.Errorf("acks %+v then %+v: want the second to be a duplicate of the first", first, second)
	}
	if got := ReadAll(t, h.Log, events.Query{}); len(got) != 1 {
		t.Errorf("stored %d events, want 1", len(got))
	}
}

func testConcurrency(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name   string
		expect func(seq uint64) events.AppendOption
	}{
		{"on the subject", events.ExpectLastSeq},
		{"on the aggregate wildcard", func(seq uint64) events.AppendOption {
			return events.ExpectLastSeqFor(seq, "fleet.agent.agg-"+"x"+".>")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := "agg-x"
			// Seed the aggregate on another subject, so the wildcard form
			// is exercised across subjects.
			if _, err := h.Log.Append(ctx(t), events.Event{Subject: agent, Data: events.AgentRegistered{Agent: agent, Host: "h"}}); err != nil {
				t.Fatal(err)
			}
			filter := "fleet.agent.agg-x.status"
			if tc.name != "on the subject" {
				filter = "fleet.agent.agg-x.>"
			}
			last, err := h.Log.LastSeq(ctx(t), filter)
			if err != nil {
				t.Fatal(err)
			}
			const n = 8
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = h.Log.Append(ctx(t), events.Event{Subject: agent, Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook", Detail: fmt.Sprint(i)}}, tc.expect(last))
				}()
			}
			wg.Wait()
			wins, conflicts := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					wins++
				case errors.Is(err, events.ErrConcurrency):
					conflicts++
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			if wins != 1 || conflicts != n-1 {
				t.Errorf("%d won, %d conflicted; want 1 and %d", wins, conflicts, n-1)
			}
		})
	}
}

func testJunk(t *testing.T, h Harness) {
	good := events.Event{Subject: "x", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "herdr"}}
	if _, err := h.Log.Append(ctx(t), good); err != nil {
		t.Fatal(err)
	}
	valid, _ := good.MarshalJSON()
	junk := [][]byte{
		[]byte("not json at all"),
		[]byte(`{"specversion":"1.0"}`),
		[]byte(`{"specversion":"1.0","id":"nope","type":"fleet.agent.status","subject":"x","time":"2026-11-30T07:00:00Z","data":{"status":"idle"}}`),
		[]byte(`{"specversion":"1.0","id":"01JF6Z0000000000000000JUNK","type":"fleet.agent.bogus","subject":"x","time":"2026-11-30T07:00:00Z","data":{}}`),
		[]byte(`{"specversion":"1.0","id":"01JF6Z0000000000000000JUNK","type":"fleet.agent.status","subject":"x","time":"2026-11-30T07:00:00Z","data":{"status":"sleepy"}}`),
		[]byte(`{"specversion":"1.0","id":"01JF6Z0000000000000000JUNK","type":"fleet.agent.status","subject":"x","time":"2026-11-30T07:00:00Z","data":[1,2]}`),
		// A valid event claiming another aggregate than its subject.
		[]byte(`{"specversion":"1.0","id":"01JF6Z0000000000000000JUNK","type":"fleet.agent.status","subject":"y","time":"2026-11-30T07:00:00Z","data":{"status":"idle","source":"x"}}`),
		{},
	}
	for _, j := range junk {
		if err := h.PublishRaw("fleet.agent.x.status", j); err != nil {
			t.Fatal(err)
		}
	}
	_ = valid
	if _, err := h.Log.Append(ctx(t), good); err != nil { // new id: a second valid event after the junk
		t.Fatal(err)
	}
	before := h.Log.Skipped()
	got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.x.status"}})
	if len(got) != 2 {
		t.Errorf("read %d valid events, want 2", len(got))
	}
	if skipped := h.Log.Skipped() - before; skipped != uint64(len(junk)) {
		t.Errorf("skipped %d, want %d", skipped, len(junk))
	}
}

func testFilters(t *testing.T, h Harness) {
	var seqs []uint64
	var afterFirst time.Time
	for i, agent := range []string{"a", "b", "a", "b", "a"} {
		ack, err := h.Log.Append(ctx(t), events.Event{Subject: agent, Data: events.AgentQueued{Text: fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Seq)
		if i == 0 {
			afterFirst = time.Now()
		}
	}
	if got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.a.>"}}); len(got) != 3 {
		t.Errorf("agent a: %d events, want 3", len(got))
	}
	got := ReadAll(t, h.Log, events.Query{FromSeq: seqs[3]})
	if len(got) != 2 || got[0].Seq != seqs[3] {
		t.Errorf("from seq %d: got %d events", seqs[3], len(got))
	}
	if got := ReadAll(t, h.Log, events.Query{Since: time.Now().Add(time.Hour)}); len(got) != 0 {
		t.Errorf("since the future: %d events, want 0", len(got))
	}
	if got := ReadAll(t, h.Log, events.Query{Since: time.Now().Add(-time.Hour)}); len(got) != 5 {
		t.Errorf("since an hour ago: %d events, want 5", len(got))
	}
	if got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.job.>"}}); len(got) != 0 {
		t.Errorf("jobs: %d events, want 0", len(got))
	}
	// A read up to a point ends there, also when its filter's next match
	// lies past it.
	if got := ReadAll(t, h.Log, events.Query{ToSeq: seqs[2]}); len(got) != 3 || got[2].Seq != seqs[2] {
		t.Errorf("to seq %d: got %d events", seqs[2], len(got))
	}
	if got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.b.>"}, ToSeq: seqs[2]}); len(got) != 1 || got[0].Seq != seqs[1] {
		t.Errorf("agent b to seq %d: got %v", seqs[2], got)
	}
	if got := ReadAll(t, h.Log, events.Query{FromSeq: seqs[3], ToSeq: seqs[2]}); len(got) != 0 {
		t.Errorf("from after to: %d events, want 0", len(got))
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		want uint64
	}{
		{"before the first event", afterFirst.Add(-time.Hour), 0},
		{"after the first event, before the second", afterFirst, seqs[0]},
		{"after the last event", time.Now().Add(time.Hour), seqs[4]},
	} {
		if got, err := h.Log.SeqAt(ctx(t), tc.at); err != nil || got != tc.want {
			t.Errorf("seq at a time %s = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	last, err := h.Log.LastSeq(ctx(t), "fleet.agent.b.>")
	if err != nil || last != seqs[3] {
		t.Errorf("last seq of b = %d, %v; want %d", last, err, seqs[3])
	}
	none, err := h.Log.LastSeq(ctx(t), "fleet.agent.zzz.>")
	if err != nil || none != 0 {
		t.Errorf("last seq of an empty aggregate = %d, %v; want 0", none, err)
	}
}

func testFollow(t *testing.T, h Harness) {
	if _, err := h.Log.Append(ctx(t), events.Event{Subject: "f", Data: events.AgentQueued{Text: "old"}}); err != nil {
		t.Fatal(err)
	}
	f, err := h.Log.Follow(ctx(t), events.Query{Subjects: []string{"fleet.agent.f.>"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	live, err := h.Log.Follow(ctx(t), events.Query{New: true})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()
	if err := h.PublishRaw("fleet.agent.f.queued", []byte("junk")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Log.Append(ctx(t), events.Event{Subject: "f", Data: events.AgentQueued{Text: "new"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"old", "new"} {
		select {
		case ev := <-f.Events():
			if got := ev.Data.(events.AgentQueued).Text; got != want {
				t.Errorf("follow got %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("follow: no %q event", want)
		}
	}
	select {
	case ev := <-live.Events():
		if got := ev.Data.(events.AgentQueued).Text; got != "new" {
			t.Errorf("new-only follow got %q, want new", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("new-only follow: nothing")
	}
	f.Stop()
	if _, ok := <-f.Events(); ok {
		t.Error("events channel still open after Stop")
	}
	if err := f.Err(); err != nil {
		t.Errorf("err after stop: %v", err)
	}
}

func testBatch(t *testing.T, h Harness) {
	var batch []events.Event
	for i := range 5 {
		batch = append(batch, events.Event{Subject: "bat", Data: events.AgentQueued{Text: fmt.Sprint(i)}})
	}
	acks, err := h.Log.AppendBatch(ctx(t), batch)
	if err != nil {
		t.Fatal(err)
	}
	got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.bat.>"}})
	if len(got) != 5 || len(acks) != 5 {
		t.Fatalf("stored %d, acked %d; want 5", len(got), len(acks))
	}
	for i, ev := range got {
		if ev.Data.(events.AgentQueued).Text != fmt.Sprint(i) || ev.Seq != acks[i].Seq || ev.ID != acks[i].ID {
			t.Errorf("event %d: %+v, ack %+v", i, ev, acks[i])
		}
	}
	// Retrying the same batch stores nothing more.
	for i := range batch {
		batch[i].ID = acks[i].ID
	}
	if _, err := h.Log.AppendBatch(ctx(t), batch); !errors.Is(err, events.ErrDuplicateBatch) {
		t.Errorf("retried batch: err %v, want ErrDuplicateBatch", err)
	}
	if got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.bat.>"}}); len(got) != 5 {
		t.Errorf("after retry: %d events, want 5", len(got))
	}
}

func testMany(t *testing.T, h Harness) {
	// More than one window of async publishes.
	var many []events.Event
	for i := range 2500 {
		many = append(many, events.Event{Subject: "many", Data: events.AgentQueued{Text: fmt.Sprint(i)}})
	}
	acks, err := h.Log.AppendMany(ctx(t), many)
	if err != nil {
		t.Fatal(err)
	}
	got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.many.>"}})
	if len(got) != len(many) || len(acks) != len(many) {
		t.Fatalf("stored %d, acked %d; want %d", len(got), len(acks), len(many))
	}
	for i, ev := range got {
		if ev.Data.(events.AgentQueued).Text != fmt.Sprint(i) || ev.Seq != acks[i].Seq || ev.ID != acks[i].ID {
			t.Fatalf("event %d: %+v, ack %+v", i, ev, acks[i])
		}
	}
	// Called again with the same ids, it stores nothing more.
	for i := range many {
		many[i].ID = acks[i].ID
	}
	again, err := h.Log.AppendMany(ctx(t), many)
	if err != nil {
		t.Fatal(err)
	}
	if !again[0].Duplicate || !again[len(again)-1].Duplicate {
		t.Errorf("a repeated call's acks are not duplicates: %+v … %+v", again[0], again[len(again)-1])
	}
	// One invalid event: nothing of the call is stored.
	bad := []events.Event{{Subject: "many2", Data: events.AgentQueued{Text: "ok"}}, {Subject: "Bad Agent", Data: events.AgentQueued{Text: "x"}}}
	if _, err := h.Log.AppendMany(ctx(t), bad); err == nil {
		t.Error("a call with an invalid event succeeded")
	}
	if got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.>"}}); len(got) != len(many) {
		t.Errorf("after the refused call: %d events, want %d", len(got), len(many))
	}
	// One event that passes the checks but cannot be encoded (JSON has
	// no NaN): the call says which, and the others are stored, as its
	// contract allows of a call that is not atomic.
	unencodable := []events.Event{
		{Subject: "many3", Data: events.AgentQueued{Text: "before"}},
		{Subject: "many3", Data: events.AgentReplied{Reply: "r", CostUSD: math.NaN()}},
		{Subject: "many3", Data: events.AgentQueued{Text: "after"}},
	}
	acks, err = h.Log.AppendMany(ctx(t), unencodable)
	if err == nil || !strings.Contains(err.Error(), "event 1") {
		t.Fatalf("a call with an event JSON cannot encode: %v, want an error naming event 1", err)
	}
	if len(acks) != 3 || acks[0].Seq == 0 || acks[1].Seq != 0 || acks[2].Seq == 0 {
		t.Errorf("acks %+v: want the first and last stored, the middle not", acks)
	}
	if got := ReadAll(t, h.Log, events.Query{Subjects: []string{"fleet.agent.many3.>"}}); len(got) != 2 {
		t.Errorf("stored %d of the call's events, want 2", len(got))
	}
}

func testInvalid(t *testing.T, h Harness) {
	for _, ev := range []events.Event{
		{Subject: "Bad.Agent", Data: events.AgentQueued{Text: "x"}},
		{Subject: "", Data: events.AgentQueued{Text: "x"}},
		{Subject: "a b", Data: events.JobDone{Status: "ok"}},
		{Subject: "ok"},
	} {
		if _, err := h.Log.Append(ctx(t), ev); err == nil {
			t.Errorf("append to %q with %T: no error", ev.Subject, ev.Data)
		}
	}
	if got := ReadAll(t, h.Log, events.Query{}); len(got) != 0 {
		t.Errorf("%d events stored, want 0", len(got))
	}
}
