package main

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// `fleetd send --context … ` in a pane with FLEET_JOB delegates a slice of
// that job's context: the shim records it and the prompt carries it.
func TestSendDelegatesASliceOfThePaneJob(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w-local")
	f.RunAgents(10*time.Millisecond, "w1")
	g := shimFor(t, f)
	f.MustAppend(events.Event{Subject: "j7", Data: events.JobCreated{Goal: "g"}})
	f.MustAppend(events.Event{Subject: "j7", Data: events.JobContext{Key: "spec", Tags: []string{"api"}, Text: "the spec"}})
	f.MustAppend(events.Event{Subject: "j7", Data: events.JobContext{Key: "ui", Tags: []string{"ui"}, Text: "ui notes"}})

	t.Setenv("FLEET_JOB", "j7")
	if code := run(fleettest.Ctx(t), []string{"send", "--url", g.URL, "--to", "w1", "--context", "tag:api", "do", "it"}); code != 0 {
		t.Fatalf("fleetd send exited %d", code)
	}
	q := eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w1.queued"}})
	sl := eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.job.j7.sliced"}})
	if len(q) != 1 || len(sl) != 1 {
		t.Fatalf("%d turns, %d slices; want one each", len(q), len(sl))
	}
	turn := q[0].Data.(events.AgentQueued)
	if turn.Job != "j7" || turn.SliceRef != sl[0].ID || !slices.Equal(sl[0].Data.(events.JobSliced).Items, []string{"spec"}) {
		t.Errorf("turn %+v, slice %+v", turn, sl[0].Data)
	}
	if want := "do it\n\n<context key=\"spec\" tags=\"api\">\nthe spec\n</context>"; turn.Text != want {
		t.Errorf("prompt %q, want %q", turn.Text, want)
	}
}
