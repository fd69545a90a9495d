package leadshim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// publishRaw puts bytes on a fleet subject the way any NATS client can.
func publishRaw(t *testing.T, f *fleettest.Fleet, subj string, data []byte) uint64 {
	t.Helper()
	ack, err := f.NATS.JS.Publish(context.Background(), subj, data)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// rawEvent is a valid-looking CloudEvents envelope, bytes as published.
func rawEvent(t *testing.T, ev events.Event) []byte {
	t.Helper()
	ev.ID, ev.Time = events.NewULIDSource(time.Now)(), time.Now()
	b, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHealthStaysGreenWhenTheLastMessageIsJunk(t *testing.T) {
	forKinds(t, func(t *testing.T, kind fleettest.Kind) {
		f := fleettest.NewKind(t, kind)
		f.Register("w1", "w")
		_, base := newShim(t, f, nil)
		for i, junk := range [][]byte{
			[]byte("not json"),
			[]byte(`{"specversion":"1.0","id":"01JF6Z0000000000000000JUNK","type":"fleet.agent.bogus","subject":"w1","time":"2026-11-30T07:00:00Z","data":{}}`),
			// A valid type with a field over its limit is junk too.
			rawEvent(t, events.Event{Subject: "w1", Data: events.AgentSession{SessionID: strings.Repeat("s", 300<<10), State: "started"}}),
		} {
			seq := publishRaw(t, f, "fleet.agent.w1.session", junk)
			checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
				status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "")
				h := mustJSON[leadshim.Health](t, body)
				if status != http.StatusOK || h.LastSeq != seq || h.Applied < seq {
					return fmt.Errorf("junk %d at #%d: healthz %d %s", i, seq, status, body)
				}
				return nil
			})
		}
		_, body := fleettest.Do(t, http.MethodGet, base+"/roster", "")
		if r := mustJSON[[]projections.Agent](t, body); len(r) != 1 || r[0].SessionID != "" {
			t.Errorf("roster after junk: %s", body)
		}
		if _, body := fleettest.Do(t, http.MethodGet, base+"/sessions", ""); strings.Contains(string(body), "sss") {
			t.Errorf("the oversized session reached the sessions view: %.200s", body)
		}
		if f.Log.Skipped() < 3 {
			t.Errorf("skipped %d, want the 3 junk messages counted", f.Log.Skipped())
		}
	})
}
