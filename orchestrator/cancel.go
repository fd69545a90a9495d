package orchestrator

import (
	"context"
	"fmt"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/lifecycle"
)

// JobCancelled is the status of a cancelled job's done event.
const JobCancelled = jobs.StatusCancelled

// Cancelled is what Cancel did to a job.
type Cancelled struct {
	// Stopped: this runner ran the job and stopped it.
	Stopped bool
	// Turns are the tasks' turns failed before an agent took them.
	Turns []string
	// Skipped are the tasks recorded skipped: never sent, or their turn
	// failed unsent.
	Skipped []string
	// Typed are the tasks whose turns an agent already works on: they run
	// to their end, and the job no longer waits for them.
	Typed []string
}

// Cancel ends job for good, on behalf of by: this runner's run of it
// stops (nothing more is sent), each task's turn still queued for an
// agent fails (reason cancelled) so no agent is given it, every task
// not yet done is recorded skipped, and the job's done event says
// "cancelled" — which no resume or later run overrides. A job the log
// lacks is ErrJobUnknown, one that had ended ErrJobDone.
func (r *Runner) Cancel(ctx context.Context, job, by string) (Cancelled, error) {
	var out Cancelled
	st, err := loadJob(ctx, r.cfg.Log, job)
	if err != nil {
		return out, err
	}
	if st.Created == nil {
		return out, fmt.Errorf("%w: %s", ErrJobUnknown, job)
	}
	if st.Done != nil {
		return out, fmt.Errorf("%w: %s ended %s", ErrJobDone, job, st.Done.Status)
	}
	// Stop the run first and wait for it, so it sends nothing after the
	// turns below are failed.
	r.mu.Lock()
	rj, running := r.running[job]
	r.mu.Unlock()
	if running {
		rj.stop()
		select {
		case <-rj.done:
		case <-ctx.Done():
			return out, ctx.Err()
		}
		out.Stopped = true
		if st, err = loadJob(ctx, r.cfg.Log, job); err != nil {
			return out, err
		}
	}
	why := "job " + job + " cancelled by " + by
	for _, t := range st.Created.Tasks {
		ts := st.Tasks[t.ID]
		switch ts.State {
		case events.TaskReplied, events.TaskFailed, events.TaskSkipped:
			continue
		}
		if ts.Turn != "" {
			turn, known, err := r.cfg.Views.Turn(ctx, ts.Turn)
			if err != nil {
				return out, err
			}
			switch {
			case known && turn.State == lifecycle.StateQueued && turn.Agent != "":
				// Final before it is typed: the agent's bridge skips it.
				if _, err := r.cfg.Log.Append(ctx, events.Event{ID: derivedID(ts.Turn, "cancelled"), Subject: turn.Agent,
					CorrelationID: ts.Turn, Data: events.AgentFailed{Reason: events.ReasonCancelled, Message: why}}); err != nil {
					return out, fmt.Errorf("cancel turn %s: %w", ts.Turn, err)
				}
				out.Turns = append(out.Turns, ts.Turn)
			case known && (turn.State == lifecycle.StateTyped || turn.State == lifecycle.StateSubmitted):
				out.Typed = append(out.Typed, t.ID)
			}
		}
		if _, err := r.cfg.Log.Append(ctx, events.Event{ID: derivedID(job, "cancelled/"+t.ID), Subject: job, CorrelationID: job,
			Data: events.JobTask{Task: t.ID, State: events.TaskSkipped, Turn: ts.Turn, Agent: ts.Agent, To: t.To, Error: why}}); err != nil {
			return out, fmt.Errorf("job %s task %s: %w", job, t.ID, err)
		}
		out.Skipped = append(out.Skipped, t.ID)
	}
	if _, err := r.cfg.Log.Append(ctx, events.Event{ID: derivedID(job, "cancelled"), Subject: job, CorrelationID: job,
		Data: events.JobDone{Status: JobCancelled, Error: why}}); err != nil {
		return out, fmt.Errorf("job %s cancelled: %w", job, err)
	}
	return out, nil
}
