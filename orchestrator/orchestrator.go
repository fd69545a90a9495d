package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/turns"
)

// Config configures an Orchestrator.
type Config struct {
	Log   events.Log
	Views projections.Views
	// Sender queues turns; default a LogSender over Log and Views, asking
	// Budgets.
	Sender Sender
	// Budgets is the default Sender's budget gate (package budget's
	// Checker): a task whose target is out of budget is not queued, and
	// fails saying which limit and when it frees. Nil: no budgets.
	Budgets turns.Budget
	// Sessions binds session:<name> targets; nil makes them an error.
	Sessions *Sessions
	// From is who the turns are from: "orchestrator" at tier 0, a main's
	// own agent id below it.
	From string
	// ParentJob is the job this orchestrator's jobs are sub-jobs of (a
	// main's FLEET_JOB), recorded in JobCreated.
	ParentJob string
	// Budget is the slice budget of tasks and plans without one.
	Budget int
	// OnProgress hears every task transition, in the order they happen
	// for one task (tasks interleave).
	OnProgress func(Progress)
	// NewID makes job and turn ids; default ULIDs.
	NewID func() string
}

func (c *Config) setDefaults() {
	if c.Sender == nil && c.Log != nil && c.Views != nil {
		s := NewLogSender(c.Log, c.Views)
		s.Budget = c.Budgets
		c.Sender = s
	}
	if c.From == "" {
		c.From = "orchestrator"
	}
	if c.Budget <= 0 {
		c.Budget = jobs.DefaultBudget
	}
	if c.OnProgress == nil {
		c.OnProgress = func(Progress) {}
	}
	if c.NewID == nil {
		c.NewID = events.NewULIDSource(time.Now)
	}
}

// Validate reports every missing piece at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, fmt.Errorf("%w: orchestrator needs a Log", ErrConfig))
	}
	if c.Views == nil {
		errs = append(errs, fmt.Errorf("%w: orchestrator needs Views", ErrConfig))
	}
	return errors.Join(errs...)
}

// Orchestrator runs plans as jobs: ready tasks go out at once as turns,
// each carrying its recorded slice of the job's context; each reply is
// folded back as the rollup rollup:<task>. It is the same at every tier:
// a main runs its sub-plans over its workers with its own Orchestrator.
type Orchestrator struct {
	cfg Config
}

// New returns an orchestrator; it does no I/O.
func New(cfg Config) (*Orchestrator, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Orchestrator{cfg: cfg}, nil
}

// NewJobID returns a fresh job id.
func (o *Orchestrator) NewJobID() string { return o.cfg.NewID() }

// Result is a finished job.
type Result struct {
	Job string
	// Rollup is the job's result: the rollups of the tasks nothing depends
	// on, in plan order, joined by a blank line.
	Rollup string
	// Rollups are every task's reply by task id.
	Rollups map[string]string
}

// Run runs plan as job (a token; NewJobID makes one). When the job is
// already in the log it resumes: the plan recorded in its created event
// wins over the one given, replied tasks are not sent again, a task
// recorded sent is re-attached by waiting on its turn id (re-queued under
// the same id if the queued event never landed), and failed tasks are
// retried. Cancelling ctx stops waiting and records nothing more, so the
// same call later picks up where this one stopped.
func (o *Orchestrator) Run(ctx context.Context, plan Plan, job string) (Result, error) {
	if err := events.ValidToken(job); err != nil {
		return Result{}, fmt.Errorf("job id: %w", err)
	}
	if err := plan.Validate(); err != nil {
		return Result{}, err
	}
	st, err := o.open(ctx, plan, job)
	if err != nil {
		return Result{}, err
	}
	return o.run(ctx, st, job)
}

// Resume continues a job from its log alone, with the plan it was created
// with.
func (o *Orchestrator) Resume(ctx context.Context, job string) (Result, error) {
	if err := events.ValidToken(job); err != nil {
		return Result{}, fmt.Errorf("job id: %w", err)
	}
	st, err := loadJob(ctx, o.cfg.Log, job)
	if err != nil {
		return Result{}, err
	}
	if st.Created == nil {
		return Result{}, fmt.Errorf("%w: %s", ErrJobUnknown, job)
	}
	return o.run(ctx, st, job)
}

// open loads the job, creating it and seeding its context when new.
func (o *Orchestrator) open(ctx context.Context, plan Plan, job string) (*jobs.Job, error) {
	st, err := loadJob(ctx, o.cfg.Log, job)
	if err != nil {
		return nil, err
	}
	if st.Created == nil {
		body, err := json.Marshal(plan)
		if err != nil {
			return nil, fmt.Errorf("encode plan: %w", err)
		}
		created := events.JobCreated{Goal: plan.Goal, Plan: string(body), Parent: o.cfg.ParentJob}
		for _, t := range plan.Tasks {
			created.Tasks = append(created.Tasks, events.TaskSpecBrief{ID: t.ID, To: t.To, Needs: t.Needs})
		}
		filter, _ := events.JobSubject(job, ">")
		_, err = o.cfg.Log.Append(ctx, events.Event{ID: derivedID(job, "created"), Subject: job, CorrelationID: job, Data: created},
			events.ExpectLastSeqFor(st.Seq, filter))
		if err != nil && !errors.Is(err, events.ErrConcurrency) {
			return nil, fmt.Errorf("create job %s: %w", job, err)
		}
		if st, err = loadJob(ctx, o.cfg.Log, job); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// run is one pass over a job until it ends or ctx does.
func (o *Orchestrator) run(ctx context.Context, st *jobs.Job, job string) (Result, error) {
	var plan Plan
	if err := json.Unmarshal([]byte(st.Created.Plan), &plan); err != nil {
		return Result{}, fmt.Errorf("%w: job %s's recorded plan: %v", ErrInvalidPlan, job, err)
	}
	if err := plan.Validate(); err != nil {
		return Result{}, fmt.Errorf("job %s's recorded plan: %w", job, err)
	}
	if st.Done != nil && st.Done.Status == "ok" {
		return o.result(plan, st.Store, job), nil
	}
	if st.Done != nil && st.Done.Status == JobCancelled {
		// A cancelled job stays cancelled: a resume must not send its
		// tasks again.
		return Result{}, fmt.Errorf("%w: %s (%s)", ErrJobCancelled, job, st.Done.Error)
	}
	r := &jobRun{o: o, plan: plan, job: job, store: st.Store, tasks: st.Tasks}
	if err := r.seed(ctx); err != nil {
		return Result{}, err
	}
	// Read-your-writes: re-attaching asks the views about turns the log
	// may hold already.
	if seq, err := o.cfg.Log.LastSeq(ctx, events.SubjectAll); err == nil {
		if err := o.cfg.Views.WaitSeq(ctx, seq); err != nil {
			return Result{}, err
		}
	}
	if err := r.loop(ctx); err != nil {
		if ctx.Err() != nil {
			return Result{}, err
		}
		r.finish(ctx, events.JobDone{Status: "failed", Error: err.Error()})
		return Result{}, err
	}
	res := o.result(plan, r.store, job)
	if err := r.finish(ctx, events.JobDone{Status: "ok", Result: res.Rollup}); err != nil {
		return res, err
	}
	return res, nil
}

func (o *Orchestrator) result(plan Plan, store *jobs.Store, job string) Result {
	res := Result{Job: job, Rollups: map[string]string{}}
	for _, t := range plan.Tasks {
		if it, ok := store.Get(jobs.RollupPrefix + t.ID); ok {
			res.Rollups[t.ID] = it.Text
		}
	}
	var parts []string
	for _, id := range plan.sinks() {
		parts = append(parts, res.Rollups[id])
	}
	res.Rollup = strings.Join(parts, "\n\n")
	return res
}

// jobRun is the state of one run of a job; the store and task states are
// the log's, kept current as this run appends.
type jobRun struct {
	o    *Orchestrator
	plan Plan
	job  string

	mu    sync.Mutex
	store *jobs.Store
	tasks map[string]jobs.TaskState
}

// seed appends the plan's context items the store lacks (or holds with
// other text).
func (r *jobRun) seed(ctx context.Context) error {
	for _, c := range r.plan.Context {
		if it, ok := r.store.Get(c.Key); ok && it.Text == c.Text {
			continue
		}
		if err := r.putContext(ctx, derivedID(r.job, "context/"+c.Key), jobs.Item{Key: c.Key, Tags: c.Tags, Text: c.Text, Provenance: "plan"}); err != nil {
			return err
		}
	}
	return nil
}

func (r *jobRun) putContext(ctx context.Context, id string, it jobs.Item) error {
	ack, err := r.o.cfg.Log.Append(ctx, events.Event{ID: id, Subject: r.job, CorrelationID: r.job, Data: events.JobContext{
		Key: it.Key, Tags: it.Tags, Text: it.Text, Provenance: it.Provenance, Size: len(it.Text)}})
	if err != nil {
		return fmt.Errorf("job %s context %s: %w", r.job, it.Key, err)
	}
	it.Seq = ack.Seq
	r.mu.Lock()
	r.store.Put(it)
	r.mu.Unlock()
	return nil
}

func (r *jobRun) state(task string) jobs.TaskState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tasks[task]
}

func (r *jobRun) record(ctx context.Context, id string, jt events.JobTask) error {
	if _, err := r.o.cfg.Log.Append(ctx, events.Event{ID: id, Subject: r.job, CorrelationID: r.job, Data: jt}); err != nil {
		return fmt.Errorf("job %s task %s %s: %w", r.job, jt.Task, jt.State, err)
	}
	r.mu.Lock()
	r.tasks[jt.Task] = jobs.TaskState{State: jt.State, Turn: jt.Turn, Agent: jt.Agent, To: jt.To, Error: jt.Error}
	r.mu.Unlock()
	return nil
}

func (r *jobRun) finish(ctx context.Context, d events.JobDone) error {
	id := r.o.cfg.NewID()
	if d.Status == "ok" {
		id = derivedID(r.job, "done")
	}
	_, err := r.o.cfg.Log.Append(ctx, events.Event{ID: id, Subject: r.job, CorrelationID: r.job, Data: d})
	r.o.cfg.OnProgress(Progress{Job: r.job, State: "done", Error: d.Error, Rollup: d.Result})
	if err != nil {
		return fmt.Errorf("job %s done: %w", r.job, err)
	}
	return nil
}

// loop sends every ready task at once and schedules more as tasks reply,
// until all replied or one failed (then it stops waiting for the rest).
func (r *jobRun) loop(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		task string
		err  error
	}
	results := make(chan outcome)
	running := map[string]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	var failed error
	for {
		if failed == nil && ctx.Err() == nil {
			for _, t := range r.plan.Tasks {
				if running[t.ID] || !r.ready(t) {
					continue
				}
				running[t.ID] = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					results <- outcome{t.ID, r.runTask(ctx, t)}
				}()
			}
		}
		if len(running) == 0 {
			break
		}
		out := <-results
		delete(running, out.task)
		if out.err != nil && failed == nil {
			failed = out.err
			cancel()
		}
	}
	if failed != nil {
		return failed
	}
	return ctx.Err()
}

// ready: not replied yet, and every task it needs has replied.
func (r *jobRun) ready(t Task) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tasks[t.ID].State == events.TaskReplied {
		return false
	}
	for _, n := range t.Needs {
		if r.tasks[n].State != events.TaskReplied {
			return false
		}
	}
	return true
}

// runTask sends a task (or re-attaches to its recorded turn) and folds its
// reply.
func (r *jobRun) runTask(ctx context.Context, t Task) error {
	st := r.state(t.ID)
	turnID, agent := "", ""
	if st.State == events.TaskSent && st.Turn != "" {
		turnID, agent = st.Turn, st.Agent
		if _, known, err := r.o.cfg.Views.Turn(ctx, turnID); err == nil && known {
			r.o.cfg.OnProgress(Progress{Job: r.job, Task: t.ID, State: "reattached", To: t.To, Agent: agent, Turn: turnID})
			return r.await(ctx, t, turnID)
		}
		// Recorded sent but never queued: queue it now under the same id.
	}
	if turnID == "" {
		turnID = r.o.cfg.NewID()
	}
	if err := r.send(ctx, t, turnID); err != nil {
		return err
	}
	return r.await(ctx, t, turnID)
}

// send binds the target, cuts and records the slice, records the task
// sent (write-ahead, with the turn id) and queues the turn.
func (r *jobRun) send(ctx context.Context, t Task, turnID string) error {
	target, err := turns.ParseTarget(t.To)
	if err != nil {
		return err
	}
	to, agent, session := target.String(), "", ""
	switch target.Kind {
	case turns.KindAgent:
		agent = target.Name
	case turns.KindSession:
		if r.o.cfg.Sessions == nil {
			return fmt.Errorf("task %s: %w for %s", t.ID, ErrNoSessions, t.To)
		}
		spec, ok := r.plan.session(target.Name)
		if !ok {
			spec = SessionSpec{Name: target.Name}
		}
		b, err := r.o.cfg.Sessions.Ensure(ctx, spec)
		if err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		to, agent, session = b.Agent, b.Agent, b.Session
	}
	sel := jobs.Selector{Needs: r.plan.inPlanOrder(t.Needs), Keys: t.Context.Keys, Tags: t.Context.Tags}
	budget := t.Budget
	if budget == 0 {
		budget = r.plan.Budget
	}
	if budget == 0 {
		budget = r.o.cfg.Budget
	}
	var sl jobs.Slice
	var ref string
	if t.Command == "" {
		// A command carries no context: only instructions get a slice.
		r.mu.Lock()
		sl = jobs.Select(r.store, sel, budget)
		r.mu.Unlock()
		sl.Job, sl.Task, sl.Session, sl.Agent = r.job, t.ID, session, agent
		if ref, err = jobs.RecordSlice(ctx, r.o.cfg.Log, sl, jobs.WithID(derivedID(turnID, "sliced"))); err != nil {
			return err
		}
	}
	if err := r.record(ctx, derivedID(turnID, "sent"), events.JobTask{Task: t.ID, State: events.TaskSent, Turn: turnID, Agent: agent, To: t.To}); err != nil {
		return err
	}
	m := Message{Turn: turnID, To: to, Text: jobs.Prompt(t.Instructions, sl), From: r.o.cfg.From,
		Context: sel.Strings(), SliceRef: ref, Job: r.job, Task: t.ID}
	if t.Command != "" {
		m.Text, m.Command, m.Context, m.SliceRef = "", t.Command, nil, ""
	}
	_, err = r.o.cfg.Sender.Send(ctx, m)
	if be, ok := errors.AsType[*turns.BudgetError](err); ok {
		// Nothing was queued: the task fails now, with the limit and
		// frees_at in its record, rather than wait for a turn that never
		// comes. A resume after frees_at sends it again.
		msg := be.Error()
		if err := r.record(ctx, derivedID(turnID, "failed"), events.JobTask{Task: t.ID, State: events.TaskFailed, Turn: turnID, Agent: agent, To: t.To, Error: msg}); err != nil {
			return err
		}
		r.o.cfg.OnProgress(Progress{Job: r.job, Task: t.ID, State: "failed", To: t.To, Agent: agent, Turn: turnID, Error: msg})
		return fmt.Errorf("%w: %s: %w", ErrTaskFailed, t.ID, err)
	}
	if err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	r.o.cfg.OnProgress(Progress{Job: r.job, Task: t.ID, State: "sent", To: t.To, Agent: agent, Turn: turnID, Items: sl.Keys(), Bytes: sl.Bytes})
	return nil
}

// await waits for the turn and folds its end into the job.
func (r *jobRun) await(ctx context.Context, t Task, turnID string) error {
	turn, err := r.o.cfg.Sender.Wait(ctx, turnID)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	if turn.State != lifecycle.StateReplied {
		msg := strings.TrimSpace(turn.Reason + ": " + turn.Message)
		if err := r.record(ctx, derivedID(turnID, "failed"), events.JobTask{Task: t.ID, State: events.TaskFailed, Turn: turnID, Agent: turn.Agent, To: t.To, Error: msg}); err != nil {
			return err
		}
		r.o.cfg.OnProgress(Progress{Job: r.job, Task: t.ID, State: "failed", To: t.To, Agent: turn.Agent, Turn: turnID, Error: msg})
		return fmt.Errorf("%w: %s (turn %s): %s", ErrTaskFailed, t.ID, turnID, msg)
	}
	prov := fmt.Sprintf("task:%s turn:%s agent:%s", t.ID, turnID, turn.Agent)
	rollup := jobs.Item{Key: jobs.RollupPrefix + t.ID, Tags: []string{jobs.TagRollup, "task:" + t.ID}, Text: turn.Reply, Provenance: prov}
	if err := r.putContext(ctx, derivedID(turnID, "rollup"), rollup); err != nil {
		return err
	}
	if err := r.record(ctx, derivedID(turnID, "replied"), events.JobTask{Task: t.ID, State: events.TaskReplied, Turn: turnID, Agent: turn.Agent, To: t.To}); err != nil {
		return err
	}
	r.o.cfg.OnProgress(Progress{Job: r.job, Task: t.ID, State: "replied", To: t.To, Agent: turn.Agent, Turn: turnID, Rollup: turn.Reply})
	return nil
}
