package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// quietFleet is a fabric whose log holds an agent, its host's up and a
// turn, appended at once, and nothing after: no heartbeats, so a point
// after them names the same last sequence for as long as the test runs.
func quietFleet(t *testing.T) *fleettest.Fleet {
	t.Helper()
	f := fleettest.New(t)
	for _, ev := range []events.Event{
		{Subject: fleettest.Host, Data: events.HostUp{Host: fleettest.Host, Version: "test"}},
		{Subject: "w-1", Data: events.AgentRegistered{Agent: "w-1", Host: fleettest.Host, Pane: "p1", Role: "w-local", Tier: 2, Parent: "lead", Model: "m1", Cwd: "/src", Origin: "spawned"}},
		{Subject: "w-1", Data: events.AgentQueued{From: "lead", Text: "hello"}},
	} {
		f.MustAppend(ev)
	}
	return f
}

type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

// getError GETs u and returns its status and JSON error.
func getError(t *testing.T, u string) (int, apiError) {
	t.Helper()
	status, b := fleettest.Do(t, http.MethodGet, u, "")
	var e apiError
	if status != http.StatusOK {
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("GET %s: %d, not a JSON error: %s", u, status, b)
		}
	}
	return status, e
}

// A point of the past is folded once: asked for again — the same
// sequence, or times that fold alike (past the last event by more than a
// host's silence, where every silent host is stale alike) — it is
// answered from the fold made, each as of its own time.
func TestTimeTravelFoldsAPointOnce(t *testing.T) {
	f := quietFleet(t)
	// The clock an hour ahead: points "40m" and "20m" ago are after the
	// last event, in the quiet that follows it.
	d, base := serve(t, f, func(c *dashboard.Config) { c.Now = func() time.Time { return time.Now().Add(time.Hour) } })

	for range 2 {
		r := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at=%232")
		if len(r.Agents) != 1 || r.Seq != 2 {
			t.Fatalf("roster as of #2: %+v", r)
		}
	}
	if st := d.Stats(); st.Folds != 1 || st.FoldHits != 1 {
		t.Errorf("#2 twice: %d folds, %d hits; want 1 fold, then the cache", st.Folds, st.FoldHits)
	}

	early := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at=40m")
	late := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at=20m")
	if _, body := get(t, base+"/ui/view?view=fleet&at=30m"); !strings.Contains(body, "w-1") {
		t.Errorf("the fleet view as of 30m ago does not show w-1")
	}
	if st := d.Stats(); st.Folds != 2 || st.FoldHits != 3 {
		t.Errorf("40m, 20m and 30m ago, all after the last event: %d folds, %d hits in all; want one more fold, answering all three", st.Folds, st.FoldHits)
	}
	if early.Seq != 3 || late.Seq != 3 || len(late.Agents) != 1 {
		t.Errorf("roster 20m ago: seq %d, %+v; want #3 and w-1", late.Seq, late.Agents)
	}
	if !late.At.After(early.At.Add(19 * time.Minute)) {
		t.Errorf("roster 40m ago as of %v, 20m ago as of %v: each is as of its own point", early.At, late.At)
	}
}

// gateLog holds the dashboard's folds (its reads with skips, which only
// a fold asks for) until open is closed.
type gateLog struct {
	events.Log
	open    chan struct{}
	waiting atomic.Int64
}

func (l *gateLog) Read(ctx context.Context, q events.Query) iter.Seq2[events.Event, error] {
	if !q.Skips {
		return l.Log.Read(ctx, q)
	}
	return func(yield func(events.Event, error) bool) {
		l.waiting.Add(1)
		select {
		case <-l.open:
		case <-ctx.Done():
			yield(events.Event{}, ctx.Err())
			return
		}
		for ev, err := range l.Log.Read(ctx, q) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// At most MaxFolds folds of the past run at once: a view of another
// point is refused with 429 and a JSON error saying why; the same point
// joins the fold under way; once it ends, the other point is folded.
func TestTimeTravelRunsAtMostMaxFoldsAtOnce(t *testing.T) {
	f := quietFleet(t)
	gate := &gateLog{Log: f.Log, open: make(chan struct{})}
	d, base := serve(t, f, func(c *dashboard.Config) {
		c.Log, c.MaxFolds, c.FoldWait = gate, 1, time.Millisecond
	})

	first := make(chan int, 2)
	view := func() {
		status, _ := fleettest.Do(t, http.MethodGet, base+"/ui/api/roster?at=%232", "")
		first <- status
	}
	go view()
	checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if n := gate.waiting.Load(); n != 1 {
			return fmt.Errorf("%d folds at the gate; want #2's", n)
		}
		return nil
	})
	go view() // the same point: it waits for the fold under way
	checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if st := d.Stats(); st.FoldHits != 1 {
			return fmt.Errorf("%+v; want the second view of #2 waiting for its fold", st)
		}
		return nil
	})

	status, e := getError(t, base+"/ui/api/roster?at=%231")
	if status != http.StatusTooManyRequests || e.Error.Code != "busy" || !strings.Contains(e.Error.Message, "1 running, the most") {
		t.Errorf("a second point while one is folded: %d %+v; want 429 busy", status, e)
	}
	if _, body := get(t, base+"/ui/view?view=turns&at=%231"); !strings.Contains(body, `"busy"`) {
		t.Errorf("the turns fragment of a second point: %s; want the busy error", body)
	}
	if st := d.Stats(); st.Folds != 1 || st.FoldsRefused != 2 {
		t.Errorf("stats %+v; want 1 fold, 2 refused", st)
	}

	close(gate.open)
	for range 2 {
		if s := <-first; s != http.StatusOK {
			t.Errorf("the view of the point folded: %d", s)
		}
	}
	if r := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at=%231"); r.Seq != 1 {
		t.Errorf("#1 once the fold ended: %+v", r)
	}
}

// A point no log holds is a 400 that says what is accepted, not the live
// fleet (year 1 is the zero time) nor a wrapped-around duration.
func TestTimeTravelRefusesAbsurdPoints(t *testing.T) {
	f := quietFleet(t)
	d, base := serve(t, f, nil)
	for _, c := range []struct{ at, says string }{
		{"0001-01-01T00:00:00Z", "before 1970"},
		{"1969-12-31T23:59:59Z", "before 1970"},
		{"3000-01-01T00:00:00Z", "more than a day after now"},
		{"1000000d", "at most 100 years"},
		{"99999999999999h", "at most 100 years"},
		{"36501d", "at most 100 years"},
	} {
		q := url.QueryEscape(c.at)
		status, e := getError(t, base+"/ui/api/roster?at="+q)
		if status != http.StatusBadRequest || e.Error.Code != "bad_at" || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("roster at=%s: %d %+v; want 400 bad_at saying %q", c.at, status, e, c.says)
		}
		if status, page := get(t, base+"/?at="+q); status != http.StatusBadRequest || !strings.Contains(page, c.says) {
			t.Errorf("page at=%s: %d; want 400 saying %q", c.at, status, c.says)
		}
	}
	if st := d.Stats(); st.Folds != 0 {
		t.Errorf("%d folds for points refused", st.Folds)
	}
	if r := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at=36500d"); r.Seq != 0 || len(r.Agents) != 0 {
		t.Errorf("a century ago, before the log: %+v; want the empty fleet", r)
	}
}

// Once retention trimmed the log's beginning, a point before what is
// left is a 400: the fleet then was not empty, its history is gone.
func TestTimeTravelRefusesPointsBeforeATrimmedLog(t *testing.T) {
	before := time.Now().Add(-time.Minute)
	f := quietFleet(t)
	stream, err := f.NATS.JS.Stream(fleettest.Ctx(t), events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(fleettest.Ctx(t), jetstream.WithPurgeSequence(3)); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, f, nil)
	for _, at := range []string{"%231", url.QueryEscape(before.UTC().Format(time.RFC3339))} {
		status, e := getError(t, base+"/ui/api/roster?at="+at)
		if status != http.StatusBadRequest || e.Error.Code != "bad_at" || !strings.Contains(e.Error.Message, "trimmed and begins at #3") {
			t.Errorf("roster at=%s: %d %+v; want 400 naming the log's first sequence", at, status, e)
		}
	}
	if r := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at=%233"); r.Seq != 3 {
		t.Errorf("roster as of #3, the first left: %+v", r)
	}
}
