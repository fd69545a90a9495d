package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// Junk on fleet.> reaches several readers in one fleetd: the projection,
// the router (its role follower and the role's worker) and the shim's
// outcome counter. Each junk message is logged once, not once per reader.
func TestUpLogsEachJunkMessageOnce(t *testing.T) {
	up := startUp(t, t.TempDir())
	log, js := connectLog(t, up.url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(ev events.Event) events.Ack {
		t.Helper()
		ack, err := log.Append(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	must(events.Event{Subject: "w1", Data: events.AgentRegistered{Agent: "w1", Host: "testhost", Pane: "p1", Role: "w"}})
	must(events.Event{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	for _, subj := range []string{"fleet.role.w.queued", "fleet.agent.w1.replied"} {
		if _, err := js.Publish(ctx, subj, []byte(`{"specversion":"1.0","junk":true}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Valid events behind the junk, whose effects show that every reader
	// went past it: the router assigns the role turn, the outcome counter
	// counts the failure.
	turn := must(events.Event{Subject: "w", Data: events.RoleQueued{From: "lead", Text: "after the junk"}})
	must(events.Event{Subject: "w1", Data: events.AgentFailed{Reason: "junk_test"}})
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		assigned := false
		for ev, err := range log.Read(ctx, events.Query{Subjects: []string{"fleet.agent.w1.queued"}}) {
			if err != nil {
				t.Fatal(err)
			}
			assigned = assigned || ev.CorrelationID == turn.ID
		}
		counted := false
		if res, err := http.Get(up.http + "/metrics"); err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			counted = strings.Contains(string(b), `fleetd_turns_total{outcome="failed",reason="junk_test"} 1`)
		}
		if !assigned || !counted {
			return fmt.Errorf("after the junk: assigned %v, counted %v\n%s", assigned, counted, up.Output())
		}
		return nil
	})
	out := up.Output()
	if got := strings.Count(out, "skipped a message that is not a valid event"); got != 2 {
		t.Errorf("two junk messages logged %d times, want 2:\n%s", got, out)
	}
	if strings.Contains(out, "malformed role message") {
		t.Errorf("the router logged the junk too:\n%s", out)
	}
}
