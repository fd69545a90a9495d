package projections_test

import (
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

func TestOpenCountsEveryTurnOnAnAgentThatIsNotFinal(t *testing.T) {
	roster := []*projections.Agent{
		{Agent: "w-1", Role: "w", QueueDepth: 2, CurrentTurn: "T1"},
		{Agent: "w-2", Role: "w"},
		{Agent: "v-1", Role: "v", CurrentTurn: "T2"},
	}
	ws := projections.OfRole(roster, "w")
	if len(ws) != 2 || ws[0].Agent != "w-1" || ws[1].Agent != "w-2" {
		t.Fatalf("OfRole(w) = %v", ws)
	}
	for _, tc := range []struct {
		a    projections.Agent
		want int
	}{{*roster[0], 3}, {*roster[1], 0}, {*roster[2], 1}} {
		if got := tc.a.Open(); got != tc.want {
			t.Errorf("%s: Open() = %d, want %d", tc.a.Agent, got, tc.want)
		}
	}
}

// Every caller gets the same roster rows until the views change, and the
// rows a caller holds stay as they were when the views move on: a change
// makes new rows, it never writes the shared ones. A row whose agent did
// not change is the same row in the next version too: a change costs one
// row, not a copy of the whole roster.
func TestRosterRowsAreSharedAndStayAsTheyWereWhenTheViewsChange(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow}))
	e.append(t, reg("w1", "h1", ""))
	ack := e.append(t, reg("w2", "h1", ""))
	waitSeq(t, p, ack.Seq)
	before, again := p.Roster(), p.Roster()
	if len(before) != 2 || &before[0] != &again[0] {
		t.Fatalf("roster %v, then %v: want the same two rows while nothing changed", before, again)
	}
	was := *before[0]
	ack = e.append(t, events.Event{Subject: "w1", Time: at(5), Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr"}})
	waitSeq(t, p, ack.Seq)
	after := p.Roster()
	if after[0].Status != events.StatusWorking {
		t.Errorf("w1 after its status event: %q, want working", after[0].Status)
	}
	if *before[0] != was {
		t.Errorf("the rows a caller held changed under it: %+v, was %+v", *before[0], was)
	}
	if after[0] == before[0] {
		t.Error("w1 changed, and its row is the one before: want a new row")
	}
	if after[1] != before[1] {
		t.Error("w2 did not change, and its row was made again: want the one before")
	}
	// A new agent lists the agents again; the unchanged rows stay shared.
	ack = e.append(t, reg("w0", "h1", ""))
	waitSeq(t, p, ack.Seq)
	grown := p.Roster()
	if len(grown) != 3 || grown[0].Agent != "w0" || grown[1].Agent != "w1" || grown[2].Agent != "w2" {
		t.Fatalf("roster after w0 registered: %v", grown)
	}
}
