package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// rawEvent is a CloudEvents envelope as any NATS client could publish it.
func rawEvent(t *testing.T, ev events.Event) []byte {
	t.Helper()
	if ev.ID == "" {
		ev.ID = events.NewULIDSource(time.Now)()
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEventStringFieldsAreBoundedAtDecode(t *testing.T) {
	reg := events.NewRegistry()
	lim := reg.Limits()
	if lim != events.DefaultLimits() || lim.ID != 256 || lim.Line != 4096 || lim.Text != events.DefaultTextLimit {
		t.Fatalf("default limits %+v", lim)
	}
	for _, tc := range []struct {
		name string
		ev   events.Event
		ok   bool
	}{
		{"a session id at the id limit", events.Event{Subject: "w1", Data: events.AgentSession{SessionID: strings.Repeat("s", 256), State: "started"}}, true},
		{"a 300 KB session id", events.Event{Subject: "w1", Data: events.AgentSession{SessionID: strings.Repeat("s", 300<<10), State: "started"}}, false},
		{"a model name one byte over", events.Event{Subject: "w1", Data: events.AgentReplied{Reply: "ok", Model: strings.Repeat("m", 257)}}, false},
		{"a cwd at the line limit", events.Event{Subject: "w1", Data: events.AgentSession{SessionID: "s", Cwd: "/" + strings.Repeat("d", 4095)}}, true},
		{"a transcript path over the line limit", events.Event{Subject: "w1", Data: events.AgentReplied{Reply: "ok", Transcript: strings.Repeat("p", 4097)}}, false},
		{"a 1 MiB text", events.Event{Subject: "w1", Data: events.AgentQueued{Text: strings.Repeat("x", 1<<20)}}, true},
		{"a text over the text limit", events.Event{Subject: "w1", Data: events.AgentQueued{Text: strings.Repeat("x", events.DefaultTextLimit+1)}}, false},
		{"a reply over the text limit", events.Event{Subject: "w1", Data: events.AgentReplied{Reply: strings.Repeat("x", events.DefaultTextLimit+1)}}, false},
		{"a context selector over the line limit", events.Event{Subject: "w1", Data: events.AgentQueued{Text: "x", Context: []string{"ok", strings.Repeat("k", 4097)}}}, false},
		{"a plan task id in a nested slice", events.Event{Subject: "J1", Data: events.JobCreated{Tasks: []events.TaskSpecBrief{{ID: strings.Repeat("t", 257), To: "role:w"}}}}, false},
		{"an oversized correlation id", events.Event{Subject: "w1", CorrelationID: strings.Repeat("c", 257), Data: events.AgentExited{}}, false},
		{"an oversized source", events.Event{Subject: "w1", Source: strings.Repeat("s", 257), Data: events.AgentExited{}}, false},
	} {
		wheres := map[string]string{
			"a context selector over the line limit": "data.context[1] is 4097 bytes, the limit is 4096",
			"a plan task id in a nested slice":       "data.tasks[0].id is 257 bytes, the limit is 256",
			"a model name one byte over":             "data.model is 257 bytes",
		}
		t.Run(tc.name, func(t *testing.T) {
			raw := rawEvent(t, tc.ev)
			subj, err := tc.ev.StreamSubject()
			if err != nil {
				t.Fatal(err)
			}
			_, err = reg.Decode(subj, raw)
			if tc.ok && err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !tc.ok && (!errors.Is(err, events.ErrTooLarge) || !errors.Is(err, events.ErrMalformed)) {
				t.Fatalf("decode: %v, want ErrTooLarge and ErrMalformed", err)
			}
			if where := wheres[tc.name]; where != "" && !strings.Contains(fmt.Sprint(err), where) {
				t.Errorf("decode: %v, want it to say %q", err, where)
			}
		})
	}

	// A registry built for larger texts takes them.
	big := events.NewRegistry(events.WithLimits(events.Limits{Text: 2 << 20}))
	if l := big.Limits(); l.Text != 2<<20 || l.ID != 256 {
		t.Fatalf("limits %+v", l)
	}
	ev := events.Event{Subject: "w1", Data: events.AgentQueued{Text: strings.Repeat("x", events.DefaultTextLimit+1)}}
	if _, err := big.Decode("fleet.agent.w1.queued", rawEvent(t, ev)); err != nil {
		t.Fatalf("a larger text limit: %v", err)
	}
}

func TestOversizedEventsAreSkippedByReadersAndRefusedByAppend(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{})
	huge := events.Event{Subject: "w1", Data: events.AgentSession{SessionID: strings.Repeat("s", 300<<10), State: "started"}}
	if _, err := log.Append(context.Background(), huge); !errors.Is(err, events.ErrTooLarge) {
		t.Fatalf("append of a 300 KB session id: %v, want ErrTooLarge", err)
	}
	if _, err := srv.JS.Publish(context.Background(), "fleet.agent.w1.session", rawEvent(t, huge)); err != nil {
		t.Fatal(err)
	}
	good, err := log.Append(context.Background(), events.Event{Subject: "w1", Data: events.AgentSession{SessionID: "s-1", State: "started"}})
	if err != nil {
		t.Fatal(err)
	}
	got := eventstest.ReadAll(t, log, events.Query{})
	if len(got) != 1 || got[0].Seq != good.Seq {
		t.Fatalf("read %+v, want only the valid event", got)
	}
	if n := log.Skipped(); n != 1 {
		t.Fatalf("skipped %d, want 1", n)
	}
}

func TestASkippedMessageIsReportedOnceHoweverManyReadersMeetIt(t *testing.T) {
	var reports atomic.Int64
	srv, log := fleettest.StartLog(t, events.Options{OnSkip: func(string, uint64, error) { reports.Add(1) }})
	// Three readers, as in fleetd: the projection (fleet.>), the gateway
	// (fleet.agent.>) and the shim's outcome counter (replies only).
	var fs []*events.Follower
	for _, subj := range []string{"fleet.>", "fleet.agent.>", "fleet.agent.*.replied"} {
		f, err := log.Follow(context.Background(), events.Query{Subjects: []string{subj}, New: true})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Stop()
		fs = append(fs, f)
	}
	if _, err := srv.JS.Publish(context.Background(), "fleet.agent.w1.replied", []byte("junk")); err != nil {
		t.Fatal(err)
	}
	ack, err := log.Append(context.Background(), events.Event{Subject: "w1", Data: events.AgentReplied{Reply: "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		select {
		case ev := <-f.Events():
			if ev.Seq != ack.Seq {
				t.Fatalf("got #%d, want #%d", ev.Seq, ack.Seq)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event after the junk")
		}
	}
	// And a later read of the whole log meets it a fourth time.
	eventstest.ReadAll(t, log, events.Query{})
	if got := reports.Load(); got != 1 {
		t.Errorf("OnSkip called %d times, want 1", got)
	}
	if got := log.Skipped(); got != 1 {
		t.Errorf("Skipped() = %d, want 1", got)
	}
}

func TestSkipsPutAPlaceholderWhereJunkWas(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{})
	first, err := log.Append(context.Background(), events.Event{Subject: "w1", Data: events.AgentExited{}})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := srv.JS.Publish(context.Background(), "fleet.agent.w1.status", []byte(`{"not":"an event"}`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, got []events.Event) {
		t.Helper()
		if len(got) != 2 || got[0].Seq != first.Seq || got[0].Skipped() || !got[1].Skipped() || got[1].Seq != pa.Sequence || got[1].NATSSubject != "fleet.agent.w1.status" {
			t.Fatalf("got %+v, want the event then a placeholder at #%d", got, pa.Sequence)
		}
	}
	check(t, eventstest.ReadAll(t, log, events.Query{Skips: true}))
	if got := eventstest.ReadAll(t, log, events.Query{}); len(got) != 1 {
		t.Fatalf("without Skips: %d events, want 1", len(got))
	}
	f, err := log.Follow(context.Background(), events.Query{Skips: true, Prefetch: 1, Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	var got []events.Event
	for len(got) < 2 {
		select {
		case ev := <-f.Events():
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("follow: %d events", len(got))
		}
	}
	check(t, got)
}
