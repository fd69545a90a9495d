package router_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/router"
	"github.com/fleetd/fleetd/turns"
)

var newID = events.NewULIDSource(time.Now)

// startRouter runs a router over f until the test ends.
func startRouter(t *testing.T, f *fleettest.Fleet, rc roles.Config) {
	t.Helper()
	r, err := router.New(router.Config{Log: f.Log, JS: f.NATS.JS, Views: f.Views, Roles: rc, Host: "h1", Poll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "router run", r.Run)
}

// queue appends a role turn and returns its id.
func queue(f *fleettest.Fleet, role, text string) string {
	id := newID()
	f.MustAppend(events.Event{ID: id, Subject: role, CorrelationID: id, Data: events.RoleQueued{From: "lead", Text: text}})
	return id
}

// assignments lists the AgentQueued events of role turns, in log order.
func assignments(t *testing.T, f *fleettest.Fleet) []events.Event {
	var out []events.Event
	for _, ev := range eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.*.queued"}}) {
		if ev.Data.(events.AgentQueued).AssignedFrom != "" {
			out = append(out, ev)
		}
	}
	return out
}

func waitTurn(t *testing.T, f *fleettest.Fleet, id string, done func(lifecycle.Turn) bool) lifecycle.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	turn, err := f.Views.WaitTurn(ctx, id, done)
	if err != nil {
		t.Fatalf("turn %s: %v (state %s, agent %q)", id, err, turn.State, turn.Agent)
	}
	return turn
}

func assigned(t lifecycle.Turn) bool { return t.Agent != "" }

func TestRoleTurnGoesToTheReadyAgentIdleLongest(t *testing.T) {
	forKinds(t, testRoleTurnGoesToTheReadyAgentIdleLongest)
}

func testRoleTurnGoesToTheReadyAgentIdleLongest(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	f.Register("a1", "adhoc")
	f.Register("a2", "adhoc")
	f.Register("b1", "other")
	// a1 is working: not ready. a2 was heard of after a3, so a3 has been idle longer.
	f.MustAppend(events.Event{Subject: "a1", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr"}})
	f.Register("a3", "adhoc")
	f.MustAppend(events.Event{Subject: "a2", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "herdr"}})
	startRouter(t, f, roles.Config{}) // "adhoc" is learned from the log

	id := queue(f, "adhoc", "first")
	turn := waitTurn(t, f, id, assigned)
	if got, want := turn.Agent, "a3"; got != want {
		t.Fatalf("first turn went to %s, want %s (ready and idle longest)", got, want)
	}
	as := assignments(t, f)
	if len(as) != 1 {
		t.Fatalf("%d assignments, want 1", len(as))
	}
	ev := as[0]
	if ev.ID != turns.AssignmentID(id) || ev.CorrelationID != id || ev.CausationID != id || ev.Data.(events.AgentQueued).AssignedFrom != "adhoc" {
		t.Errorf("assignment %+v: want id %s, correlation and causation %s, assigned from adhoc", ev, turns.AssignmentID(id), id)
	}
	if got := ev.Data.(events.AgentQueued).Text; got != "first" {
		t.Errorf("assigned text %q, want first", got)
	}

	second := waitTurn(t, f, queue(f, "adhoc", "second"), assigned)
	if got, want := second.Agent, "a2"; got != want {
		t.Errorf("second turn went to %s, want %s (a3 has a turn queued, a1 works)", got, want)
	}
}

func TestTurnWaitsUntilAnAgentIsReady(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.MustAppend(events.Event{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook"}})
	startRouter(t, f, roles.Config{Roles: map[string]roles.Role{"w": {}}})
	id := queue(f, "w", "hello")

	// The router holds the head of the queue while the only agent is blocked.
	cons := mustConsumer(t, f, "w")
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		info, err := cons.Info(fleettest.Ctx(t))
		if err != nil || info.NumAckPending != 1 {
			return fmt.Errorf("ack pending: %v %v", info, err)
		}
		return nil
	})
	if turn, _, _ := f.Views.Turn(fleettest.Ctx(t), id); turn.Agent != "" {
		t.Fatalf("turn assigned to blocked agent %s", turn.Agent)
	}
	f.MustAppend(events.Event{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusDone, Source: "herdr"}})
	if got := waitTurn(t, f, id, assigned).Agent; got != "w1" {
		t.Fatalf("assigned to %q, want w1", got)
	}
}

func TestCapBoundsTurnsInFlightAndKeepsFIFO(t *testing.T) {
	forKinds(t, testCapBoundsTurnsInFlightAndKeepsFIFO)
}

func testCapBoundsTurnsInFlightAndKeepsFIFO(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	for _, a := range []string{"w1", "w2", "w3"} {
		f.Register(a, "w")
	}
	f.RunAgents(20 * time.Millisecond)
	startRouter(t, f, roles.Config{Roles: map[string]roles.Role{"w": {Cap: 2}}})

	var ids []string
	for i := range 8 {
		ids = append(ids, queue(f, "w", fmt.Sprintf("task %d", i)))
	}
	for _, id := range ids {
		if turn := waitTurn(t, f, id, func(t lifecycle.Turn) bool { return t.State.Final() }); turn.State != lifecycle.StateReplied {
			t.Fatalf("turn %s ended %s", id, turn.State)
		}
	}
	evs := eventstest.ReadAll(t, f.Log, events.Query{})
	if got := fleettest.MaxInFlight(evs, "w"); got > 2 {
		t.Errorf("%d role turns in flight at once, cap is 2", got)
	}
	var order []string
	for _, ev := range assignments(t, f) {
		order = append(order, ev.CorrelationID)
	}
	if !slices.Equal(order, ids) {
		t.Errorf("assignment order %v, want queue order %v", order, ids)
	}
}

func TestRedeliveredTurnIsNotAssignedTwice(t *testing.T) {
	forKinds(t, testRedeliveredTurnIsNotAssignedTwice)
}

func testRedeliveredTurnIsNotAssignedTwice(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	f.Register("w1", "w")
	f.Register("w2", "w")
	id := queue(f, "w", "once")
	// A router assigned it to w1 and died before acking.
	f.MustAppend(events.Event{ID: turns.AssignmentID(id), Subject: "w1", CorrelationID: id, Data: events.AgentQueued{Text: "once", AssignedFrom: "w"}})
	startRouter(t, f, roles.Config{}) // "w" is found in the stream
	cons := mustConsumer(t, f, "w")
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		info, err := cons.Info(fleettest.Ctx(t))
		if err != nil || info.AckFloor.Consumer < 1 {
			return fmt.Errorf("not acked yet: %v %v", info, err)
		}
		return nil
	})
	as := assignments(t, f)
	if len(as) != 1 || as[0].Subject != "w1" {
		t.Fatalf("assignments %v, want only the one to w1", as)
	}
}

func mustConsumer(t *testing.T, f *fleettest.Fleet, role string) interface {
	Info(context.Context) (*jetstream.ConsumerInfo, error)
} {
	t.Helper()
	var c interface {
		Info(context.Context) (*jetstream.ConsumerInfo, error)
	}
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		cons, err := f.NATS.JS.Consumer(fleettest.Ctx(t), events.Stream, router.ConsumerName(role))
		c = cons
		return err
	})
	return c
}

func TestTwoRoutersAssignEveryTurnExactlyOnce(t *testing.T) {
	forKinds(t, testTwoRoutersAssignEveryTurnExactlyOnce)
}

func testTwoRoutersAssignEveryTurnExactlyOnce(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	for _, a := range []string{"w1", "w2", "w3"} {
		f.Register(a, "w")
	}
	f.RunAgents(10 * time.Millisecond)
	rc := roles.Config{Roles: map[string]roles.Role{"w": {Cap: 3}}}
	startRouter(t, f, rc)
	startRouter(t, f, rc)

	var wg sync.WaitGroup
	ids := make([]string, 12)
	for i := range ids {
		wg.Go(func() { ids[i] = queue(f, "w", fmt.Sprintf("t%d", i)) })
	}
	wg.Wait()
	for _, id := range ids {
		waitTurn(t, f, id, func(t lifecycle.Turn) bool { return t.State == lifecycle.StateReplied })
	}
	count := map[string]int{}
	for _, ev := range assignments(t, f) {
		count[ev.CorrelationID]++
	}
	for _, id := range ids {
		if count[id] != 1 {
			t.Errorf("turn %s assigned %d times", id, count[id])
		}
	}
}

// forKinds runs test against the folded and the materialized views.
func forKinds(t *testing.T, test func(*testing.T, fleettest.Kind)) {
	for _, kind := range fleettest.Kinds {
		t.Run(string(kind), func(t *testing.T) { test(t, kind) })
	}
}

// registerOn adds an idle agent of role on host, which heartbeats.
func registerOn(t *testing.T, f *fleettest.Fleet, agent, role, host string) {
	t.Helper()
	f.MustAppend(events.Event{Subject: host, Data: events.HostUp{Host: host}})
	f.MustAppend(events.Event{Subject: agent, Data: events.AgentRegistered{Agent: agent, Host: host, Pane: "p-" + agent, Role: role, Tier: 2}})
	ack := f.MustAppend(events.Event{Subject: agent, Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
}

// releases lists the AgentReleased events in log order.
func releases(t *testing.T, f *fleettest.Fleet) []events.Event {
	return eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.*.released"}})
}

func TestATurnAssignedToAStaleHostsAgentGoesToAnotherAgentOfTheRole(t *testing.T) {
	forKinds(t, testATurnAssignedToAStaleHostsAgentGoesToAnotherAgentOfTheRole)
}

func testATurnAssignedToAStaleHostsAgentGoesToAnotherAgentOfTheRole(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	registerOn(t, f, "a1", "w", "ha")
	startRouter(t, f, roles.Config{})
	startRouter(t, f, roles.Config{}) // two routers: one release, one new assignment
	id := queue(f, "w", "survive")
	waitTurn(t, f, id, func(t lifecycle.Turn) bool { return t.Agent == "a1" })
	// What a1's gateway knows when it decides to type the turn.
	gatewaySeen, err := f.Log.LastSeq(fleettest.Ctx(t), "fleet.agent.a1.>")
	if err != nil {
		t.Fatal(err)
	}

	// a1's host dies before its gateway typed the turn; a2 is up elsewhere.
	registerOn(t, f, "a2", "w", "hb")
	f.MustAppend(events.Event{Subject: "ha", Data: events.HostDown{Host: "ha", Reason: "test"}})
	got := waitTurn(t, f, id, func(t lifecycle.Turn) bool { return t.Agent == "a2" })
	if got.Releases != 1 || got.ReleasedFrom != "a1" || got.State != lifecycle.StateQueued {
		t.Errorf("turn = %+v, want queued on a2 after one release from a1", got)
	}
	rs := releases(t, f)
	if len(rs) != 1 || rs[0].Subject != "a1" || rs[0].CorrelationID != id {
		t.Fatalf("releases %v, want one from a1", rs)
	}
	if d := rs[0].Data.(events.AgentReleased); d.Reason != events.ReasonHostStale || d.Attempt != 1 || d.Role != "w" {
		t.Errorf("release %+v", d)
	}
	as := assignments(t, f)
	if len(as) != 2 || as[0].Subject != "a1" || as[1].Subject != "a2" || as[0].ID == as[1].ID {
		t.Errorf("assignments %v, want a1 then a2 under different ids", as)
	}

	// The old gateway, back at that moment, cannot type it on a1: its
	// append is guarded by a1's sequence as it knew it, before the release.
	_, err = f.Log.Append(fleettest.Ctx(t), events.Event{Subject: "a1", CorrelationID: id, Data: events.AgentTyped{Pane: "p-a1"}},
		events.ExpectLastSeqFor(gatewaySeen, "fleet.agent.a1.>"))
	if !errors.Is(err, events.ErrConcurrency) {
		t.Fatalf("the stale gateway's typed append: %v, want ErrConcurrency", err)
	}
	f.RunAgents(0, "a2")
	waitTurn(t, f, id, func(t lifecycle.Turn) bool { return t.State == lifecycle.StateReplied })
	if typed := eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.*.typed"}}); len(typed) != 1 || typed[0].Subject != "a2" {
		t.Errorf("typed %v, want once, on a2", typed)
	}
}

func TestATypedTurnIsNeverReleased(t *testing.T) {
	f := fleettest.New(t)
	registerOn(t, f, "a1", "w", "ha")
	startRouter(t, f, roles.Config{})
	id := queue(f, "w", "typed before the host died")
	waitTurn(t, f, id, func(t lifecycle.Turn) bool { return t.Agent == "a1" })
	f.MustAppend(events.Event{Subject: "a1", CorrelationID: id, Data: events.AgentTyped{Pane: "p-a1", Method: "agent.prompt"}})
	f.MustAppend(events.Event{Subject: "ha", Data: events.HostDown{Host: "ha", Reason: "test"}})
	// A later turn of the role is decided after the stale host was seen.
	registerOn(t, f, "a2", "w", "hb")
	later := queue(f, "w", "later")
	waitTurn(t, f, later, func(t lifecycle.Turn) bool { return t.Agent == "a2" })
	if got := waitTurn(t, f, id, func(lifecycle.Turn) bool { return true }); got.Agent != "a1" || got.State != lifecycle.StateTyped {
		t.Errorf("typed turn = %+v, want still typed on a1", got)
	}
	if rs := releases(t, f); len(rs) != 0 {
		t.Errorf("releases %v, want none", rs)
	}
}
