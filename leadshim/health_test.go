package leadshim_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// switchableHealth is a Config.Health a test sets.
type switchableHealth struct {
	mu sync.Mutex
	h  events.Health
}

func (s *switchableHealth) set(h events.Health) { s.mu.Lock(); s.h = h; s.mu.Unlock() }
func (s *switchableHealth) err() error          { s.mu.Lock(); defer s.mu.Unlock(); return s.h.Err() }

// While the log cannot take new work, /healthz says why (503 with the
// code and reason), sends are refused with it before anything is queued,
// a turn accepted before answers its deadline with the reason instead of
// a bare timeout, and GET shows why it is stalled. Healthy again, all is
// as before.
func TestAnUnhealthyLogIsReportedAndRefusesSends(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w") // nobody plays it: turns stay queued
	health := &switchableHealth{}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Health = health.err })

	status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "")
	if status != http.StatusOK {
		t.Fatalf("healthy: %d %s", status, body)
	}
	accepted := postAsync(t, base, `{"to":"w1","text":"before","wait":false}`).ID

	for _, c := range []struct {
		code, reason string
	}{
		{events.HealthStreamLost, "the FLEET stream is missing"},
		{events.HealthStoreFull, "the JetStream store is full (3.0 MiB of 3.0 MiB)"},
		{events.HealthStoreLow, "the JetStream store is nearly full"},
	} {
		health.set(events.Health{Code: c.code, Reason: c.reason})
		status, body = fleettest.Do(t, http.MethodGet, base+"/healthz", "")
		h := mustJSON[leadshim.Health](t, body)
		if status != http.StatusServiceUnavailable || h.Code != c.code || !strings.Contains(h.Error, c.reason) {
			t.Errorf("%s: healthz %d %s", c.code, status, body)
		}
		status, body = post(t, base, `{"to":"w1","text":"refused","wait":false}`)
		if e := errorOf(t, body); status != http.StatusServiceUnavailable || e.Code != c.code || !strings.Contains(e.Message, c.reason) {
			t.Errorf("%s: send %d %s", c.code, status, body)
		}
		status, body = fleettest.Do(t, http.MethodGet, base+"/message/"+accepted, "")
		if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "queued" || !strings.Contains(env.Stalled, c.reason) {
			t.Errorf("%s: GET of the accepted turn %d %s", c.code, status, body)
		}
	}
	// Nothing refused was queued.
	for _, ev := range eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w1.queued"}}) {
		if d := ev.Data.(events.AgentQueued); d.Text == "refused" {
			t.Fatal("a refused send was queued")
		}
	}

	// A long-poll of a turn accepted while healthy, ending while the store
	// is full, shows why the turn is stalled.
	health.set(events.Health{})
	id := postAsync(t, base, `{"to":"w1","text":"waits","timeout":"1s","wait":false}`).ID
	health.set(events.Health{Code: events.HealthStoreFull, Reason: "the JetStream store is full"})
	status, body = fleettest.Do(t, http.MethodGet, base+"/message/"+id+"?wait=1500ms", "")
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Stalled == "" {
		t.Errorf("long-poll while full: %d %s", status, body)
	}
	health.set(events.Health{})
	status, body = post(t, base, `{"to":"w1","text":"slow","timeout":"300ms"}`)
	if status != http.StatusGatewayTimeout {
		t.Fatalf("healthy timeout: %d %s", status, body)
	}
}

// A blocking send whose turn cannot finish because the log stopped taking
// writes meanwhile answers 503 with the reason and the id to re-attach.
func TestABlockedTurnAnswersItsDeadlineWithTheReason(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	health := &switchableHealth{}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Health = health.err })
	done := make(chan struct{})
	var status int
	var body []byte
	go func() {
		defer close(done)
		status, body = post(t, base, `{"to":"w1","text":"stuck","timeout":"1s"}`)
	}()
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if len(eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w1.queued"}})) == 0 {
			return errors.New("the send was not queued")
		}
		return nil
	})
	health.set(events.Health{Code: events.HealthStoreFull, Reason: "the JetStream store is full (9 MiB of 8 MiB)"})
	<-done
	e := errorOf(t, body)
	if status != http.StatusServiceUnavailable || e.Code != events.HealthStoreFull || e.ID == "" ||
		!strings.Contains(e.Message, "store is full") || !strings.Contains(e.Message, "recorded as failed") {
		t.Fatalf("%d %s", status, body)
	}
}
