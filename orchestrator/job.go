package orchestrator

import (
	"context"
	"fmt"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
)

// taskState is a task's last recorded state in the job's log.
type taskState struct {
	State string
	Turn  string
	Agent string
	Error string
}

// jobState is a job folded from fleet.job.<job>.>: everything a resumed
// run needs.
type jobState struct {
	created *events.JobCreated
	seq     uint64 // last sequence on the job
	store   *jobs.Store
	tasks   map[string]taskState
	done    *events.JobDone
}

func loadJob(ctx context.Context, log events.Log, job string) (*jobState, error) {
	subj, err := events.JobSubject(job, ">")
	if err != nil {
		return nil, err
	}
	st := &jobState{store: jobs.NewStore(), tasks: map[string]taskState{}}
	for ev, err := range log.Read(ctx, events.Query{Subjects: []string{subj}}) {
		if err != nil {
			return nil, fmt.Errorf("load job %s: %w", job, err)
		}
		st.apply(ev)
	}
	return st, nil
}

func (st *jobState) apply(ev events.Event) {
	st.seq = max(st.seq, ev.Seq)
	switch d := ev.Data.(type) {
	case events.JobCreated:
		if st.created == nil {
			st.created = &d
		}
	case events.JobContext:
		st.store.Apply(ev)
	case events.JobTask:
		if st.tasks[d.Task].State == events.TaskReplied {
			return // final
		}
		st.tasks[d.Task] = taskState{State: d.State, Turn: d.Turn, Agent: d.Agent, Error: d.Error}
	case events.JobDone:
		st.done = &d
	}
}
