package leadshim_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/projections"
)

// GET /roster is encoded once per projection position: the same body and
// ETag until something is applied, 304 to a poller that has it, and the
// change at once after one.
func TestRosterIsServedFromOneEncodingPerChange(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	_, base := newShim(t, f, nil)
	get := func(etag string) (int, string, []projections.Agent) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/roster", nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var agents []projections.Agent
		if resp.StatusCode == http.StatusOK {
			agents = mustJSON[[]projections.Agent](t, b)
		}
		return resp.StatusCode, resp.Header.Get("ETag"), agents
	}

	code, tag1, agents := get("")
	if code != http.StatusOK || tag1 == "" || len(agents) != 1 || agents[0].Agent != "w1" {
		t.Fatalf("first GET: %d etag %q agents %+v", code, tag1, agents)
	}
	if code, tag, _ := get(""); code != http.StatusOK || tag != tag1 {
		t.Errorf("second GET with nothing applied: %d etag %q, want 200 %q", code, tag, tag1)
	}
	if code, _, _ := get(tag1); code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", code)
	}

	f.Register("w2", "w")
	code, tag2, agents := get(tag1)
	if code != http.StatusOK || tag2 == tag1 || len(agents) != 2 {
		t.Errorf("after a registration: %d etag %q (was %q), %d agents; want 200, a new ETag, 2", code, tag2, tag1, len(agents))
	}
}

// A host turning stale is a change no event carries (the clock passed its
// TTL): the roster served over HTTP shows it at once, with a new ETag,
// though the projection applied nothing new.
func TestTheRosterShowsAHostGoingStaleThoughNoEventSaysSo(t *testing.T) {
	f := fleettest.New(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	p := projections.New(f.Log, f.NATS.JS, projections.Options{Memory: true, HostTTL: time.Minute, SweepInterval: 5 * time.Millisecond,
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	fleettest.Run(t, "projector", p.Run)
	<-p.Ready()
	f.Views = p
	t0 := time.Unix(0, clock.Load())
	f.MustAppend(events.Event{Subject: "hq", Time: t0, Data: events.HostUp{Host: "hq"}})
	f.MustAppend(events.Event{Subject: "w1", Time: t0, Data: events.AgentRegistered{Agent: "w1", Host: "hq", Pane: "p1", Role: "w"}})
	f.MustAppend(events.Event{Subject: "w1", Time: t0, Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	// The log has heard of the fleet 90 s on (another host's beat):
	// judged against it, hq is silent once the clock is past its TTL.
	ack := f.MustAppend(events.Event{Subject: "hr", Time: t0.Add(90 * time.Second), Data: events.HostUp{Host: "hr"}})
	if err := p.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := newShim(t, f, nil)
	roster := func() ([]projections.Agent, string) {
		resp, err := http.Get(base + "/roster")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return mustJSON[[]projections.Agent](t, b), resp.Header.Get("ETag")
	}
	agents, tag := roster()
	if len(agents) != 1 || agents[0].Stale {
		t.Fatalf("roster %+v, want w1 live", agents)
	}
	applied := p.Applied()
	clock.Add(int64(2 * time.Minute)) // hq silent past its TTL
	checkfor.Eventually(t, 5*time.Second, 5*time.Millisecond, func() error {
		if agents, now := roster(); len(agents) != 1 || !agents[0].Stale || now == tag {
			return fmt.Errorf("roster %+v (ETag %s, was %s), want w1 stale under a new ETag", agents, now, tag)
		}
		return nil
	})
	if p.Applied() != applied {
		t.Fatalf("an event was applied meanwhile (%d → %d): the test proves nothing", applied, p.Applied())
	}
}
