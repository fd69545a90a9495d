package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
)

// board is every job the log holds, each folded by jobs.Job: what the
// jobs view shows, kept current by a live stream as job events arrive.
type board struct {
	jobs map[string]*jobs.Job
	seq  uint64
}

func newBoard() *board { return &board{jobs: map[string]*jobs.Job{}} }

func (b *board) apply(ev events.Event) {
	b.seq = max(b.seq, ev.Seq)
	j, ok := b.jobs[ev.Subject]
	if !ok {
		j = jobs.NewJob(ev.Subject)
		b.jobs[ev.Subject] = j
	}
	j.Apply(ev)
}

// loadBoard folds every job event up to the view's point.
func (s *Server) loadBoard(ctx context.Context, src source) (*board, error) {
	toSeq, ok := src.readTo()
	if !ok {
		return newBoard(), nil
	}
	return s.loadBoardTo(ctx, toSeq)
}

// loadBoardTo folds every job event up to toSeq (0: the log's end).
func (s *Server) loadBoardTo(ctx context.Context, toSeq uint64) (*board, error) {
	b := newBoard()
	for ev, err := range s.cfg.Log.Read(ctx, events.Query{Subjects: []string{"fleet.job.>"}, ToSeq: toSeq}) {
		if err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
		b.apply(ev)
	}
	return b, nil
}

// jobsModel is the jobs view: the newest jobs, and one of them whole.
type jobsModel struct {
	Jobs     []jobSummary
	Total    int
	Selected *jobDetail
}

type jobSummary struct {
	ID, Goal, Status string
	Created          string
	Tasks, Replied   int
}

type jobDetail struct {
	Job    *jobs.Job
	Status string
	Tasks  []taskRow
	Items  int
	Bytes  int
}

type taskRow struct {
	events.TaskSpecBrief
	State  jobs.TaskState
	Slices []events.JobSliced
	Rollup string
	Has    bool // a rollup was folded in
}

// jobStatus reads a job's state in one word.
func jobStatus(j *jobs.Job) string {
	switch {
	case j.Done != nil && j.Done.Status == "ok":
		return "done"
	case j.Done != nil && j.Done.Status == jobs.StatusCancelled:
		return "cancelled"
	case j.Done != nil:
		return "failed"
	case j.Created == nil:
		return "unknown"
	}
	return "running"
}

func (s *Server) jobsModel(b *board, selected string) jobsModel {
	all := make([]*jobs.Job, 0, len(b.jobs))
	for _, j := range b.jobs {
		if j.Created != nil {
			all = append(all, j)
		}
	}
	slices.SortFunc(all, func(x, y *jobs.Job) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	m := jobsModel{Total: len(all)}
	for _, j := range all[:min(len(all), s.cfg.Jobs)] {
		sum := jobSummary{ID: j.ID, Goal: j.Created.Goal, Status: jobStatus(j), Created: clock(j.CreatedAt), Tasks: len(j.Created.Tasks)}
		for _, t := range j.Tasks {
			if t.State == events.TaskReplied {
				sum.Replied++
			}
		}
		m.Jobs = append(m.Jobs, sum)
	}
	if selected == "" && len(all) > 0 {
		selected = all[0].ID
	}
	if j, ok := b.jobs[selected]; ok && j.Created != nil {
		d := &jobDetail{Job: j, Status: jobStatus(j)}
		for _, it := range j.Store.Items() {
			d.Items++
			d.Bytes += it.Size
		}
		for _, t := range j.Created.Tasks {
			row := taskRow{TaskSpecBrief: t, State: j.Tasks[t.ID], Slices: j.Slices[t.ID]}
			if it, ok := j.Rollup(t.ID); ok {
				row.Rollup, row.Has = it.Text, true
			}
			d.Tasks = append(d.Tasks, row)
		}
		m.Selected = d
	}
	return m
}
