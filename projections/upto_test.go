package projections_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/projections/projectionstest"
)

// A fold up to a point of the log, made after the log has moved on, shows
// exactly what a fold made at that point showed: roster, sessions, turns
// and hosts (time travel by the same fold, not a second one).
func TestFoldUpToAPointEqualsTheFoldMadeThen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w := projectionstest.Generate(projectionstest.Config{Seed: 11, Events: 3000 / workloadScale})
	now := func() time.Time { return w.End }
	half := len(w.Ops) / 2

	mid, err := projectionstest.Play(ctx, e.log, e.js, w.Ops[:half])
	if err != nil {
		t.Fatal(err)
	}
	then := projections.New(e.log, nil, projections.Options{Memory: true, Now: now})
	if err := then.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := projectionstest.Play(ctx, e.log, e.js, w.Ops[half:]); err != nil {
		t.Fatal(err)
	}

	at := projections.New(e.log, nil, projections.Options{Memory: true, Now: now, UpTo: mid})
	if err := at.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if got := at.Applied(); got != mid {
		t.Errorf("folded up to #%d, want #%d", got, mid)
	}
	ids := turnIDs(then.Turns(nil))
	if len(ids) < 50/workloadScale || len(then.Roster()) == 0 {
		t.Fatalf("workload too thin: %d turns, %d agents", len(ids), len(then.Roster()))
	}
	if err := diff("up to the point vs then", memView(t, at, ids), memView(t, then, ids)); err != nil {
		t.Fatal(err)
	}
	if got, want := turnIDs(at.Turns(nil)), ids; !slices.Equal(got, want) {
		t.Errorf("turns listed up to the point: %d, then: %d", len(got), len(want))
	}
	if got, want := at.Hosts(), then.Hosts(); !slices.Equal(got, want) {
		t.Errorf("hosts up to the point %+v, then %+v", got, want)
	}
}

// Turns lists what the fold holds, newest queued first, filtered, and
// Hosts every announced host with its liveness.
func TestTurnsAndHostsList(t *testing.T) {
	e := newEnv(t)
	base := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	p := start(t, projections.New(e.log, nil, projections.Options{Memory: true, Now: func() time.Time { return base.Add(time.Minute) }}))
	e.append(t, events.Event{Subject: "h1", Time: base, Data: events.HostUp{Host: "h1"}})
	e.append(t, events.Event{Subject: "h2", Time: base.Add(time.Second), Data: events.HostUp{Host: "h2"}})
	e.append(t, events.Event{Subject: "h2", Time: base.Add(2 * time.Second), Data: events.HostDown{Host: "h2"}})
	e.append(t, reg("w1", "h1", ""))
	e.append(t, reg("w2", "h1", ""))
	var last events.Ack
	newID := events.NewULIDSource(time.Now)
	var ids []string
	for i, agent := range []string{"w1", "w2", "w1"} {
		ids = append(ids, newID())
		last = e.append(t, events.Event{ID: ids[i], Subject: agent, Time: base.Add(time.Duration(10+i) * time.Second),
			Data: events.AgentQueued{From: "lead", Text: "x"}})
	}
	waitSeq(t, p, last.Seq)

	if got, want := turnIDs(p.Turns(nil)), []string{ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Errorf("turns %v, want newest first %v", got, want)
	}
	if got, want := turnIDs(p.Turns(func(t lifecycle.Turn) bool { return t.Agent == "w1" })), []string{ids[2], ids[0]}; !slices.Equal(got, want) {
		t.Errorf("w1's turns %v, want %v", got, want)
	}
	hosts := p.Hosts()
	if len(hosts) != 2 || hosts[0].Host != "h1" || !hosts[0].LastBeat.Equal(base) || hosts[1].Host != "h2" || !hosts[1].Down || !hosts[1].Stale {
		t.Errorf("hosts %+v", hosts)
	}
}

// Only a memory fold stops at a point, and only Rebuild folds to it; on a
// trimmed log it folds what is left rather than refuse.
func TestFoldUpToAPointIsAMemoryRebuild(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := projections.New(e.log, e.js, projections.Options{UpTo: 5}).Rebuild(ctx); !errors.Is(err, projections.ErrInvalidOptions) {
		t.Errorf("a materialized fold up to a point: %v, want ErrInvalidOptions", err)
	}
	if err := projections.New(e.log, nil, projections.Options{Memory: true, UpTo: 5}).Run(ctx); !errors.Is(err, projections.ErrInvalidOptions) {
		t.Errorf("Run up to a point: %v, want ErrInvalidOptions", err)
	}

	e.append(t, reg("gone", "h1", ""))
	e.append(t, reg("w1", "h1", ""))
	mid := e.append(t, reg("w2", "h1", ""))
	e.append(t, reg("w3", "h1", ""))
	if _, err := events.Trim(ctx, e.js, events.SubjectAll, 2); err != nil {
		t.Fatal(err)
	}
	p := projections.New(e.log, nil, projections.Options{Memory: true, UpTo: mid.Seq})
	if err := p.Rebuild(ctx); err != nil {
		t.Fatalf("fold of a trimmed log up to #%d: %v", mid.Seq, err)
	}
	var got []string
	for _, a := range p.Roster() {
		got = append(got, a.Agent)
	}
	if want := []string{"w1", "w2"}; !slices.Equal(got, want) {
		t.Errorf("roster of what is left up to #%d: %v, want %v", mid.Seq, got, want)
	}
}

func turnIDs(ts []lifecycle.Turn) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}
