package dashboard

import (
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
)

// A cancelled job reads "cancelled" in the jobs view, not "failed": a
// person stopped it, nothing went wrong.
func TestACancelledJobIsShownCancelled(t *testing.T) {
	j := jobs.NewJob("J1")
	j.Apply(events.Event{Subject: "J1", Seq: 1, Data: events.JobCreated{Goal: "g"}})
	j.Apply(events.Event{Subject: "J1", Seq: 2, Data: events.JobDone{Status: jobs.StatusCancelled, Error: "job J1 cancelled by lead"}})
	j.Apply(events.Event{Subject: "J1", Seq: 3, Data: events.JobDone{Status: "failed", Error: "a task's turn failed: cancelled"}})
	if got := jobStatus(j); got != "cancelled" {
		t.Errorf("status %q, want cancelled", got)
	}
}
