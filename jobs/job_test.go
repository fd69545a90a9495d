package jobs_test

import (
	"context"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/jobs"
)

// A job folds from its log: the plan, each task's latest state (replied
// is final), the slices handed out, the rollups, how it ended; and up to
// a point, as it stood then.
func TestLoadJobFoldsItsRecord(t *testing.T) {
	_, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/jobs"})
	ctx := context.Background()
	appendJob := func(d events.Data) uint64 {
		t.Helper()
		ack, err := log.Append(ctx, events.Event{Subject: "j1", CorrelationID: "j1", Data: d})
		if err != nil {
			t.Fatal(err)
		}
		return ack.Seq
	}
	appendJob(events.JobCreated{Goal: "ship", Tasks: []events.TaskSpecBrief{{ID: "a", To: "role:w"}, {ID: "b", To: "role:w", Needs: []string{"a"}}}})
	appendJob(events.JobSliced{Task: "a", Items: []string{"spec"}, Bytes: 10, Budget: 100})
	sent := appendJob(events.JobTask{Task: "a", State: events.TaskSent, Turn: "T1", Agent: "w-1", To: "role:w"})
	appendJob(events.JobContext{Key: "rollup:a", Tags: []string{"rollup"}, Text: "done a"})
	appendJob(events.JobTask{Task: "a", State: events.TaskReplied, Turn: "T1", Agent: "w-1"})
	appendJob(events.JobTask{Task: "a", State: events.TaskFailed, Turn: "T0", Error: "a stale retry"})
	appendJob(events.JobDone{Status: "ok", Result: "done a"})
	if _, err := log.Append(ctx, events.Event{Subject: "j2", Data: events.JobCreated{Goal: "other"}}); err != nil {
		t.Fatal(err)
	}

	j, err := jobs.LoadJob(ctx, log, "j1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if j.Created == nil || j.Created.Goal != "ship" || len(j.Created.Tasks) != 2 || j.Created.Tasks[1].Needs[0] != "a" {
		t.Errorf("created: %+v", j.Created)
	}
	if got := j.Tasks["a"]; got.State != events.TaskReplied || got.Turn != "T1" || got.Agent != "w-1" {
		t.Errorf("task a: %+v, want replied on T1 (a later failure of a replied task changes nothing)", got)
	}
	if sl := j.Slices["a"]; len(sl) != 1 || sl[0].Bytes != 10 || sl[0].Items[0] != "spec" {
		t.Errorf("slices of a: %+v", sl)
	}
	if it, ok := j.Rollup("a"); !ok || it.Text != "done a" {
		t.Errorf("rollup of a: %+v %v", it, ok)
	}
	if j.Done == nil || j.Done.Status != "ok" || j.DoneAt.IsZero() {
		t.Errorf("done: %+v", j.Done)
	}

	then, err := jobs.LoadJob(ctx, log, "j1", sent)
	if err != nil {
		t.Fatal(err)
	}
	if got := then.Tasks["a"]; got.State != events.TaskSent || then.Done != nil || then.Seq != sent {
		t.Errorf("as of #%d: task a %+v, done %+v, seq %d", sent, got, then.Done, then.Seq)
	}
	if _, ok := then.Rollup("a"); ok {
		t.Errorf("as of #%d the rollup of a was not there yet", sent)
	}
}
