package leadshim_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

func TestEventStreamRequestsAreCheckedBeforeAnythingIsFollowed(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	_, base := newShim(t, f, nil)
	for _, tc := range []struct {
		name, query, lastID string
		code                string
	}{
		{"an empty token", "subject=fleet..x", "", "bad_subject"},
		{"a trailing dot", "subject=fleet.agent.", "", "bad_subject"},
		{"'>' before the end", "subject=fleet.>.x", "", "bad_subject"},
		{"a wildcard inside a token", "subject=fleet.ag*nt.>", "", "bad_subject"},
		{"a space in a token", "subject=fleet.agent.w%201.>", "", "bad_subject"},
		{"outside fleet.>", "subject=other.>", "", "bad_subject"},
		{"fleet alone", "subject=fleet", "", "bad_subject"},
		{"a prefix that is not a token", "subject=fleetx.>", "", "bad_subject"},
		{"overlapping filters", "subject=fleet.agent.w1.>&subject=fleet.*.*.replied", "", "bad_subject"},
		{"the same filter twice", "subject=fleet.host.>&subject=fleet.host.>", "", "bad_subject"},
		{"too many filters", "subject=" + strings.Repeat("fleet.host.h.x&subject=", 16) + "fleet.host.h.y", "", "bad_subject"},
		{"since, not a number", "since=x", "", "bad_since"},
		{"since, negative", "since=-1", "", "bad_since"},
		{"since, over uint64", "since=18446744073709551616", "", "bad_since"},
		{"Last-Event-ID over uint64", "", "18446744073709551616", "bad_last_event_id"},
		{"Last-Event-ID with a sign", "", "+5", "bad_last_event_id"},
		{"Last-Event-ID negative", "", "-1", "bad_last_event_id"},
		{"Last-Event-ID in exponent form", "", "1e3", "bad_last_event_id"},
		{"Last-Event-ID, two ids", "", "5,6", "bad_last_event_id"},
		{"Last-Event-ID hexadecimal", "", "0x10", "bad_last_event_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.lastID != "" {
				hdr = []string{"Last-Event-ID", tc.lastID}
			}
			status, body := fleettest.Do(t, http.MethodGet, base+"/events?"+tc.query, "", hdr...)
			if status != http.StatusBadRequest || errorOf(t, body).Code != tc.code {
				t.Errorf("%d %s, want 400 %s", status, body, tc.code)
			}
		})
	}

	// Filters that do not overlap are fine.
	sc := openSSE(t, base+"/events?since=0&subject=fleet.agent.w1.>&subject=fleet.host.>")
	if got := readSSE(t, sc, 2); got[0].id != 1 || got[1].id != 2 {
		t.Errorf("filtered stream from 0: %+v", got)
	}
	// A Last-Event-ID at the top of uint64 (once the whole log from 0: the
	// next id overflowed) and a since past the end both mean from now.
	maxID := openSSE(t, base+"/events", "Last-Event-ID", "18446744073709551615")
	past := openSSE(t, base+"/events?since=1000000")
	ack := f.MustAppend(events.Event{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr"}})
	for name, sc := range map[string]*bufio.Scanner{"Last-Event-ID max": maxID, "since past the end": past} {
		if got := readSSE(t, sc, 1); got[0].id != ack.Seq {
			t.Errorf("%s: first event #%d, want the new #%d", name, got[0].id, ack.Seq)
		}
	}
}

func TestEventReadersOverTheCapAreRefusedWith429(t *testing.T) {
	f := fleettest.New(t)
	s, base := newShim(t, f, func(c *leadshim.Config) { c.MaxEventReaders = 2 })
	ctx, closeFirst := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("first reader: %v", err)
	}
	defer res.Body.Close()
	openSSE(t, base+"/events")
	status, body := fleettest.Do(t, http.MethodGet, base+"/events", "")
	if status != http.StatusTooManyRequests || errorOf(t, body).Code != "too_many_readers" {
		t.Fatalf("third reader: %d %s", status, body)
	}
	if st := s.Stats(); st.EventReaders != 2 || st.EventReadersRefused != 1 {
		t.Fatalf("stats %+v", st)
	}
	closeFirst()
	waitStats(t, s, "one reader left", func(st leadshim.Stats) bool { return st.EventReaders == 1 })
	openSSE(t, base+"/events")
}

// fillLog appends n job context events of size bytes each.
func fillLog(t *testing.T, f *fleettest.Fleet, n, size int) {
	t.Helper()
	text := strings.Repeat("x", size)
	var batch []events.Event
	for i := range n {
		batch = append(batch, events.Event{Subject: "J1", Data: events.JobContext{Key: fmt.Sprint("k", i), Text: text, Size: size}})
		if len(batch) == 100 || i == n-1 {
			if _, err := f.Log.AppendBatch(fleettest.Ctx(t), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// unreadStream opens GET /events?since=0 on a raw connection with a small
// receive buffer, reads the answer's status and never reads further.
func unreadStream(t *testing.T, base string) int {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	rc := &rawConn{Conn: c, r: bufio.NewReader(c)}
	rc.send(t, "GET /events?since=0 HTTP/1.1\r\nHost: fleetd\r\n\r\n")
	res := rc.response(t, 20*time.Second)
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusTooManyRequests || errorOf(t, b).Code != "too_many_readers" {
			t.Fatalf("unread stream: %d %s", res.StatusCode, b)
		}
		c.Close()
	}
	return res.StatusCode
}

func TestAnEventReaderThatStopsReadingIsDropped(t *testing.T) {
	f := fleettest.New(t)
	fillLog(t, f, 1000, 16<<10) // 16 MB: more than any socket buffers
	s, base := runShim(t, f, func(c *leadshim.Config) { c.EventWriteTimeout = 200 * time.Millisecond })
	if status := unreadStream(t, base); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	waitStats(t, s, "the reader dropped", func(st leadshim.Stats) bool {
		return st.EventReadersDropped == 1 && st.EventReaders == 0
	})
}

// 500 dashboards open the whole log and never read it. fleetd stays on
// its NATS connection and healthy; the shim serves MaxEventReaders of
// them, refuses the rest, and holds a bounded number of events for them.
func TestFiveHundredUnreadEventStreamsLeaveFleetdHealthy(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	fillLog(t, f, 600, 16<<10) // ~10 MB
	s, base := runShim(t, f, nil)
	maxReaders, buffer := 64, 1 // the default cap; one decoded event waits per stream
	before := f.NATS.NC.Stats().Reconnects
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap before: %d MB", ms.HeapInuse>>20)
	ok, refused := 0, 0
	for range 500 {
		switch unreadStream(t, base) {
		case http.StatusOK:
			ok++
		default:
			refused++
		}
		if st := s.Stats(); st.EventsBuffered > maxReaders*buffer {
			t.Fatalf("buffered %d events, more than %d readers × %d", st.EventsBuffered, maxReaders, buffer)
		}
	}
	if ok != maxReaders || refused != 500-maxReaders {
		t.Fatalf("%d streams served, %d refused; want %d and %d", ok, refused, maxReaders, 500-maxReaders)
	}
	st := s.Stats()
	if st.EventReaders != maxReaders || st.EventReadersRefused != uint64(500-maxReaders) || st.EventsBuffered > maxReaders*buffer {
		t.Fatalf("stats %+v", st)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap with the streams: %d MB; stats %+v", ms.HeapInuse>>20, st)
	// fleetd itself is fine: healthy, still on its connection, answering.
	for range 3 {
		status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "")
		if status != http.StatusOK {
			t.Fatalf("healthz with 500 unread streams: %d %s", status, body)
		}
	}
	ack := f.MustAppend(events.Event{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatalf("the views stopped following the log: %v", err)
	}
	if got := f.NATS.NC.Stats().Reconnects - before; got != 0 || !f.NATS.NC.IsConnected() {
		t.Fatalf("fleetd's NATS connection reconnected %d times (connected %v)", got, f.NATS.NC.IsConnected())
	}
	if st := s.Stats(); st.EventsBuffered > maxReaders*buffer {
		t.Fatalf("buffered %d events", st.EventsBuffered)
	}
}

// Pulls are bounded in bytes too, never below the largest message: the
// largest event a stream can meet still arrives.
func TestAnEventStreamDeliversTheLargestEvents(t *testing.T) {
	f := fleettest.New(t)
	text := strings.Repeat(`"`, 1<<20) // 1 MiB, twice that as JSON
	ack := f.MustAppend(events.Event{Subject: "w1", Data: events.AgentQueued{Text: text}})
	f.MustAppend(events.Event{Subject: "w1", Data: events.AgentQueued{Text: text}})
	_, base := newShim(t, f, func(c *leadshim.Config) { c.EventBuffer = 1 })
	sc := openSSE(t, base+"/events?since=0")
	sc.Buffer(make([]byte, 0, 4<<20), 4<<20)
	got := readSSE(t, sc, 2)
	if got[0].id != ack.Seq || len(got[0].data) < 2<<20 || len(got[1].data) < 2<<20 {
		t.Fatalf("events #%d (%d bytes), #%d (%d bytes)", got[0].id, len(got[0].data), got[1].id, len(got[1].data))
	}
}
