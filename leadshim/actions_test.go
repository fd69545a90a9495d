package leadshim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/router"
	"github.com/fleetd/fleetd/turns"
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
// cancelled, the message naming who; a turn typed, final or unknown is
// not, and the answer says why.
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

// A role turn no agent has taken yet is cancelled in its role's queue, and
// a router that decided before the cancel cannot put it on an agent after
// it: its assignment has the cancel's id, and the log stores one of them.
// A role turn an agent has is cancelled on that agent.
func TestCancelARoleTurnInItsQueue(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	_, base := newShim(t, f, nil)
	c := leadshim.NewClient(base, "")
	ctx := fleettest.Ctx(t)

	waiting := postAsync(t, base, `{"to":"role:w","text":"waits in its queue","wait":false}`)
	got, err := c.Cancel(ctx, waiting.ID, "alice")
	if err != nil || got.Role != "w" || got.Agent != "" || got.By != "alice" {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	env, err := c.Turn(ctx, waiting.ID, "")
	if err != nil || env.Status != string(lifecycle.StateFailed) || env.Reason != events.ReasonCancelled || !strings.Contains(env.Message, "cancelled by alice") {
		t.Errorf("the cancelled turn: %+v %v", env, err)
	}
	// The router's assignment, decided on views read before the cancel.
	late, err := turns.Assignment(roleQueued(t, f, waiting.ID), "w-1")
	if err != nil {
		t.Fatal(err)
	}
	ack, err := f.Log.Append(ctx, late)
	if err != nil || !ack.Duplicate {
		t.Fatalf("the late assignment: %+v %v; want a duplicate the log does not store", ack, err)
	}
	if n := len(queuedOn(t, f, waiting.ID)); n != 0 {
		t.Errorf("the log puts the cancelled turn on an agent %d times", n)
	}
	if q := f.Views.Roster(); len(q) != 1 || q[0].QueueDepth != 0 {
		t.Errorf("roster after the late assignment: %+v", q)
	}

	// Taken by an agent first: the cancel finds it there.
	taken := postAsync(t, base, `{"to":"role:w","text":"taken","wait":false}`)
	assign, err := turns.Assignment(roleQueued(t, f, taken.ID), "w-1")
	if err != nil {
		t.Fatal(err)
	}
	if ack := f.MustAppend(assign); ack.Duplicate {
		t.Fatal("the assignment was not stored")
	}
	got, err = c.Cancel(ctx, taken.ID, "bob")
	if err != nil || got.Agent != "w-1" || got.Role != "" {
		t.Fatalf("cancel of an assigned role turn: %+v %v", got, err)
	}
	status, b := fleettest.Do(t, http.MethodPost, base+"/message/"+waiting.ID+"/cancel", `{"from":"alice"}`)
	if status != http.StatusConflict || errorOf(t, b).Code != "turn_done" {
		t.Errorf("cancel again: %d %s", status, b)
	}
}

// Cancels racing a running router: every cancel answers, and one that
// says it cancelled a turn in its role's queue is never contradicted by
// the log — no agent ever got that turn; one that cancelled it on an agent
// names the agent the log put it on. The router goes on assigning after.
func TestCancelsRaceTheRouter(t *testing.T) {
	f := fleettest.New(t)
	for _, a := range []string{"w-1", "w-2", "w-3"} {
		f.Register(a, "w")
	}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Roles = roles.Config{} })
	r, err := router.New(router.Config{Log: f.Log, JS: f.NATS.JS, Views: f.Views, Host: "h1", Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "router", r.Run)
	c := leadshim.NewClient(base, "")
	ctx := fleettest.Ctx(t)

	const n = 30
	results := make([]leadshim.Cancelled, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		ids[i] = postAsync(t, base, fmt.Sprintf(`{"to":"role:w","text":"turn %d","wait":false}`, i)).ID
		wg.Go(func() {
			got, err := c.Cancel(ctx, ids[i], "racer")
			if err != nil {
				t.Errorf("cancel %d: %v", i, err)
			}
			results[i] = got
		})
	}
	wg.Wait()
	var inQueue, onAgent int
	for i, got := range results {
		placed := queuedOn(t, f, ids[i])
		switch {
		case got.Role == "w" && got.Agent == "":
			inQueue++
			if len(placed) != 0 {
				t.Errorf("turn %d: cancelled in its role's queue, but the log put it on %v", i, placed)
			}
		case got.Agent != "":
			onAgent++
			if len(placed) != 1 || placed[0] != got.Agent {
				t.Errorf("turn %d: cancelled on %s, but the log put it on %v", i, got.Agent, placed)
			}
		default:
			continue // its error is reported above
		}
		tn, err := f.Views.WaitTurn(ctx, ids[i], func(t lifecycle.Turn) bool { return t.State.Final() })
		if err != nil || tn.Reason != events.ReasonCancelled {
			t.Errorf("turn %d: %+v %v, want failed cancelled", i, tn, err)
		}
	}
	t.Logf("%d cancelled in the role's queue, %d on an agent", inQueue, onAgent)
	after := postAsync(t, base, `{"to":"role:w","text":"after the race","wait":false}`)
	if _, err := f.Views.WaitTurn(ctx, after.ID, func(t lifecycle.Turn) bool { return t.Agent != "" }); err != nil {
		t.Errorf("a role turn after the race was not assigned: %v", err)
	}
}

// roleQueued is the RoleQueued event of turn id, as the router reads it.
func roleQueued(t *testing.T, f *fleettest.Fleet, id string) events.Event {
	t.Helper()
	for _, ev := range eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.role.*.queued"}}) {
		if lifecycle.TurnID(ev) == id {
			return ev
		}
	}
	t.Fatalf("no RoleQueued for turn %s", id)
	return events.Event{}
}

// queuedOn lists the agents the log put turn id on.
func queuedOn(t *testing.T, f *fleettest.Fleet, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{turns.QueuedAll}}) {
		if lifecycle.TurnID(ev) == id {
			out = append(out, ev.Subject)
		}
	}
	return out
}
