package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
)

// Cancelling a running job stops its run, fails the turn still queued
// for an agent (so it is never typed), records every open task skipped
// and the job cancelled — and a resume sends nothing again.
func TestCancelStopsAJobAndFailsItsQueuedTurns(t *testing.T) {
	f := newFleet(t, func(ctx context.Context, agent, role string, turn lifecycle.Turn) string {
		<-ctx.Done() // w-1 works on a until the test ends
		return ""
	})
	r := f.runner()
	// a and b go to w-1 at once: one is typed and works, the other waits
	// in w-1's queue; c needs them, so it is never sent.
	plan := []byte(`{"goal":"g","tasks":[{"id":"a","to":"w-1","instructions":"task a"},{"id":"b","to":"w-1","instructions":"task b"},` +
		`{"id":"c","to":"w-2","instructions":"task c","needs":["a","b"]}]}`)
	job, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: plan, From: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	var typedTask, queuedTurn string
	checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		j, err := jobs.LoadJob(f.ctx, f.log, job, 0)
		if err != nil {
			return err
		}
		typedTask, queuedTurn = "", ""
		for _, task := range []string{"a", "b"} {
			tr, _, _ := f.views.Turn(f.ctx, j.Tasks[task].Turn)
			switch tr.State {
			case lifecycle.StateSubmitted:
				typedTask = task
			case lifecycle.StateQueued:
				queuedTurn = tr.ID
			}
		}
		if typedTask == "" || queuedTurn == "" {
			return fmt.Errorf("tasks %+v", j.Tasks)
		}
		return nil
	})

	got, err := r.Cancel(f.ctx, job, "lead")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Stopped || !slices.Equal(got.Turns, []string{queuedTurn}) || !slices.Equal(got.Typed, []string{typedTask}) || !slices.Equal(got.Skipped, []string{"a", "b", "c"}) {
		t.Errorf("cancel = %+v, want stopped, turn %s failed, %s typed, a b c skipped", got, queuedTurn, typedTask)
	}
	if _, running := r.Running(job); running {
		t.Error("the job still runs after its cancel")
	}
	if err := f.views.WaitSeq(f.ctx, lastSeq(t, f)); err != nil {
		t.Fatal(err)
	}
	if tr, _, _ := f.views.Turn(f.ctx, queuedTurn); tr.State != lifecycle.StateFailed || tr.Reason != events.ReasonCancelled {
		t.Errorf("the queued turn: %s %q, want failed cancelled", tr.State, tr.Reason)
	}
	j := f.finished(r, job)
	if j.Done == nil || j.Done.Status != orchestrator.JobCancelled {
		t.Fatalf("job done = %+v, want cancelled", j.Done)
	}

	// A resume (or a cancel) of a cancelled job does nothing.
	if _, err := r.Start(f.ctx, orchestrator.RunRequest{Job: job, From: "lead"}); err != nil {
		t.Fatal(err)
	}
	if j := f.finished(r, job); j.Done.Status != orchestrator.JobCancelled {
		t.Errorf("after a resume, job done = %+v", j.Done)
	}
	if got := f.queuedByTask(job); got["c"] != 0 || got["a"] != 1 || got["b"] != 1 {
		t.Errorf("queued per task after a resume = %v, want a and b once, c never", got)
	}
	if _, err := r.Cancel(f.ctx, job, "lead"); !errors.Is(err, orchestrator.ErrJobDone) {
		t.Errorf("cancel of a cancelled job: %v, want ErrJobDone", err)
	}
	if _, err := r.Cancel(f.ctx, "nosuchjob", "lead"); !errors.Is(err, orchestrator.ErrJobUnknown) {
		t.Errorf("cancel of an unknown job: %v, want ErrJobUnknown", err)
	}
}

func lastSeq(t *testing.T, f *fleet) uint64 {
	t.Helper()
	seq, err := f.log.LastSeq(f.ctx, events.SubjectAll)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}
