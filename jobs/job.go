package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/events"
)

// Job is a job as its events tell (fleet.job.<job>.>): the plan it was
// created with, each task's latest state, the slices handed out, the
// context store with the rollups, and how it ended. The orchestrator
// resumes a job from it and the dashboard shows it: one fold of a job's
// record for both. Not safe for concurrent use.
type Job struct {
	ID string
	// Created is the job's created event (nil until it is folded), at
	// CreatedAt.
	Created   *events.JobCreated
	CreatedAt time.Time
	// Seq is the stream sequence of the last event applied: the expected
	// last sequence of the job's next write.
	Seq uint64
	// Store is the job's context store: seed items and rollups.
	Store *Store
	// Tasks is each task's latest recorded state.
	Tasks map[string]TaskState
	// Slices are the slices recorded for each task, in order (a task sent
	// again gets another).
	Slices map[string][]events.JobSliced
	// Done is how the job ended (nil while it runs), at DoneAt.
	Done   *events.JobDone
	DoneAt time.Time
}

// TaskState is a task's last recorded state in its job's log.
type TaskState struct {
	// State is one of events.TaskSent, TaskReplied, TaskFailed, …; empty
	// before the task was sent.
	State string
	Turn  string
	Agent string
	To    string
	Error string
	// At is when the state was recorded.
	At time.Time
}

// StatusCancelled is the status of a cancelled job's done event: final,
// whatever is recorded after it.
const StatusCancelled = "cancelled"

// NewJob returns the empty fold of job id.
func NewJob(id string) *Job {
	return &Job{ID: id, Store: NewStore(), Tasks: map[string]TaskState{}, Slices: map[string][]events.JobSliced{}}
}

// Apply folds one of the job's events. A replied task is final: a later
// record of it (a stale retry's) changes nothing.
func (j *Job) Apply(ev events.Event) {
	j.Seq = max(j.Seq, ev.Seq)
	switch d := ev.Data.(type) {
	case events.JobCreated:
		if j.Created == nil {
			j.Created, j.CreatedAt = &d, ev.Time
		}
	case events.JobContext:
		j.Store.Apply(ev)
	case events.JobSliced:
		j.Slices[d.Task] = append(j.Slices[d.Task], d)
	case events.JobTask:
		if j.Tasks[d.Task].State == events.TaskReplied {
			return
		}
		j.Tasks[d.Task] = TaskState{State: d.State, Turn: d.Turn, Agent: d.Agent, To: d.To, Error: d.Error, At: ev.Time}
	case events.JobDone:
		// A cancelled job stays cancelled: a run elsewhere that ends it
		// later (its turns failed by the cancel) does not undo that.
		if j.Done != nil && j.Done.Status == StatusCancelled {
			return
		}
		j.Done, j.DoneAt = &d, ev.Time
	}
}

// Rollup is task's reply as folded into the job's context, if it replied.
func (j *Job) Rollup(task string) (Item, bool) { return j.Store.Get(RollupPrefix + task) }

// LoadJob folds job from the log, up to the sequence toSeq when it is not
// zero (the job as it stood then).
func LoadJob(ctx context.Context, log events.Log, job string, toSeq uint64) (*Job, error) {
	subj, err := events.JobSubject(job, ">")
	if err != nil {
		return nil, err
	}
	j := NewJob(job)
	for ev, err := range log.Read(ctx, events.Query{Subjects: []string{subj}, ToSeq: toSeq}) {
		if err != nil {
			return nil, fmt.Errorf("load job %s: %w", job, err)
		}
		j.Apply(ev)
	}
	return j, nil
}
