package leadshim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
)

// agentsFake is an Agents port that records what it was asked and fails
// as told per agent.
type agentsFake struct {
	asked []string
	fail  map[string]error
}

func (a *agentsFake) Stop(_ context.Context, agent, by string) error {
	a.asked = append(a.asked, "stop "+agent+" by "+by)
	return a.fail[agent]
}

func (a *agentsFake) Restart(_ context.Context, agent, by string) (events.AgentRegistered, error) {
	a.asked = append(a.asked, "restart "+agent+" by "+by)
	if err := a.fail[agent]; err != nil {
		return events.AgentRegistered{}, err
	}
	return events.AgentRegistered{Agent: agent, Host: "h1", Pane: "p-new"}, nil
}

// Stop and restart answer for this host's live agents through the port,
// naming who acts, and say why not for every other at the door, before
// the port is asked.
func TestStopAndRestartAnswersSayWhyNot(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	f.Register("w-gone", "w")
	f.MustAppend(events.Event{Subject: "w-gone", Data: events.AgentExited{Reason: "pane closed"}})
	f.MustAppend(events.Event{Subject: "w-far", Data: events.AgentRegistered{Agent: "w-far", Host: "h2", Pane: "p-far", Role: "w"}})
	f.Register("w-adopted", "w")
	f.Register("w-busy", "w")
	fake := &agentsFake{fail: map[string]error{
		"w-adopted": fmt.Errorf("%w: an adopted pane", leadshim.ErrNotRestartable),
		"w-busy":    fmt.Errorf("%w: w-busy", leadshim.ErrRestarting),
	}}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Agents = fake })
	_, noHerdr := newShim(t, f, nil)
	if err := f.Views.WaitSeq(fleettest.Ctx(t), f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}}).Seq); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, base, path, body string
		status                 int
		want                   string
	}{
		{"stopped", base, "/agents/w-1/stop", `{"from":"alice"}`, http.StatusOK, `"by":"alice"`},
		{"restarted", base, "/agents/w-1/restart", `{"from":"alice"}`, http.StatusOK, `"pane":"p-new"`},
		{"from lead without a body", base, "/agents/w-1/stop", ``, http.StatusOK, `"by":"lead"`},
		{"unknown agent", base, "/agents/ghost/stop", `{}`, http.StatusNotFound, "unknown_agent"},
		{"exited agent", base, "/agents/w-gone/restart", `{}`, http.StatusConflict, "agent_exited"},
		{"another host's agent", base, "/agents/w-far/stop", `{}`, http.StatusConflict, "other_host"},
		{"adopted pane", base, "/agents/w-adopted/restart", `{}`, http.StatusConflict, "not_restartable"},
		{"restart running", base, "/agents/w-busy/stop", `{}`, http.StatusConflict, "restarting"},
		{"bad from", base, "/agents/w-1/stop", `{"from":"Not An Id"}`, http.StatusBadRequest, "bad_from"},
		{"unknown field", base, "/agents/w-1/stop", `{"by":"x"}`, http.StatusBadRequest, "bad_json"},
		{"no herdr", noHerdr, "/agents/w-1/stop", `{}`, http.StatusServiceUnavailable, "no_herdr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := fleettest.Do(t, http.MethodPost, tc.base+tc.path, tc.body)
			if status != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("POST %s %s: %d %s, want %d with %s", tc.path, tc.body, status, b, tc.status, tc.want)
			}
		})
	}
	if got, want := strings.Join(fake.asked, "; "), "stop w-1 by alice; restart w-1 by alice; stop w-1 by lead; restart w-adopted by lead; stop w-busy by lead"; got != want {
		t.Errorf("the port was asked %q, want %q", got, want)
	}
	if status, b := fleettest.Do(t, http.MethodGet, base+"/agents/w-1/stop", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("GET stop: %d %s", status, b)
	}
}

// A turn still queued for an agent is cancelled: failed, reason
// cancelled, the message naming who; a turn typed, final, unassigned or
// unknown is not, and the answer says why.
func TestCancelAQueuedTurn(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	_, base := newShim(t, f, nil)
	c := leadshim.NewClient(base, "")
	ctx := fleettest.Ctx(t)
	// The head of the queue is typed (one turn per pane, in queue
	// order); the one behind it waits.
	typed := postAsync(t, base, `{"to":"w-1","text":"one","wait":false}`)
	queued := postAsync(t, base, `{"to":"w-1","text":"two","wait":false}`)
	role := postAsync(t, base, `{"to":"role:w","text":"three","wait":false}`)
	ack := f.MustAppend(events.Event{Subject: "w-1", CorrelationID: typed.ID, Data: events.AgentTyped{Pane: "p-w-1", Method: "pane.send_input"}})
	if err := f.Views.WaitSeq(ctx, ack.Seq); err != nil {
		t.Fatal(err)
	}

	got, err := c.Cancel(ctx, queued.ID, "alice")
	if err != nil || got.Agent != "w-1" || got.By != "alice" || got.ID != queued.ID {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	env, err := c.Turn(ctx, queued.ID, "")
	if err != nil || env.Status != string(lifecycle.StateFailed) || env.Reason != events.ReasonCancelled || !strings.Contains(env.Message, "cancelled by alice") {
		t.Errorf("the cancelled turn: %+v %v", env, err)
	}
	for _, tc := range []struct {
		name, id string
		status   int
		code     string
	}{
		{"again", queued.ID, http.StatusConflict, "turn_done"},
		{"typed", typed.ID, http.StatusConflict, "turn_typed"},
		{"unassigned", role.ID, http.StatusConflict, "unassigned"},
		{"unknown", "01JF6Z0000000000000000000A", http.StatusNotFound, "unknown_turn"},
		{"not a ULID", "nope", http.StatusBadRequest, "bad_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := fleettest.Do(t, http.MethodPost, base+"/message/"+tc.id+"/cancel", `{"from":"alice"}`)
			if status != tc.status || errorOf(t, b).Code != tc.code {
				t.Errorf("cancel %s: %d %s, want %d %s", tc.id, status, b, tc.status, tc.code)
			}
		})
	}
}
