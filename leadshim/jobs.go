package leadshim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
)

// Jobs runs plans as jobs in the background on this host: the gateway's
// orchestrator runner. Its errors wrap ErrBadPlan for a plan that breaks
// its schema and ErrUnknownJob for a resume of a job the log lacks.
type Jobs interface {
	// Start runs the plan as the job (a new id when empty; an existing one
	// resumes, with the plan it was created with), or resumes the job from
	// the log when Plan is empty, and returns the job id at once.
	Start(ctx context.Context, j JobStart) (string, error)
	// Running is a channel closed once this host's run of job ends, and
	// whether it runs one.
	Running(job string) (<-chan struct{}, bool)
	// Cancel ends the job for good on behalf of from: this host's run of
	// it stops, its turns still queued for an agent fail, its open tasks
	// are skipped and the job is recorded cancelled. Its errors wrap
	// ErrUnknownJob, or ErrJobDone for a job that had ended.
	Cancel(ctx context.Context, job, from string) (JobCancelled, error)
}

// JobCancel is the body of POST /jobs/{job}/cancel.
type JobCancel struct {
	// From is who cancels: recorded in the job's done event.
	From string `json:"from"`
}

// JobCancelled answers POST /jobs/{job}/cancel: what the cancel did.
type JobCancelled struct {
	Job string `json:"job"`
	// Stopped: this host ran the job and stopped it.
	Stopped bool `json:"stopped"`
	// Turns are the tasks' turns failed before an agent took them.
	Turns []string `json:"turns"`
	// Skipped are the tasks recorded skipped; Typed those among them an
	// agent already works on, which run to their end unwatched.
	Skipped []string `json:"skipped"`
	Typed   []string `json:"typed"`
}

// Plan limits at the door: a plan is recorded whole in its job's created
// event, which must fit one NATS message, and each task costs the job's
// run a goroutine, a turn and a slice, so a plan over either bound is
// refused before anything starts rather than failing in the background.
const (
	// DefaultMaxPlanTasks bounds the tasks of one plan (Config.MaxPlanTasks).
	DefaultMaxPlanTasks = 1000
	// planEventMargin is what a created event holds beside the plan: the
	// envelope (ids, source, time) and the tasks' briefs' keys.
	planEventMargin = 8 << 10
)

// checkPlan refuses a plan too large for its job's created event (413
// plan_too_large) or with more tasks than MaxPlanTasks (400
// too_many_tasks). The event holds the plan re-encoded (compact, HTML
// characters escaped) as a JSON string, and each task's id, target and
// needs again; a bound on both is measured here, as the log would.
func (s *Server) checkPlan(plan json.RawMessage) *apiError {
	var shape struct {
		Tasks []struct {
			ID    json.RawMessage `json:"id"`
			To    json.RawMessage `json:"to"`
			Needs json.RawMessage `json:"needs"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(plan, &shape); err != nil {
		return fail(http.StatusBadRequest, "bad_plan", "plan: %v", err)
	}
	if n := len(shape.Tasks); n > s.cfg.MaxPlanTasks {
		return fail(http.StatusBadRequest, "too_many_tasks", "the plan has %d tasks; at most %d (split it into jobs, e.g. a main's sub-jobs with parent_job)", n, s.cfg.MaxPlanTasks)
	}
	compact, err := json.Marshal(plan)
	if err != nil {
		return fail(http.StatusBadRequest, "bad_plan", "plan: %v", err)
	}
	// The created event's plan field is free text, bounded by the log's
	// text limit; the runner re-encodes the plan, which may add a field
	// the caller left out ("goal"), hence the slack.
	if limit := events.DefaultLimits().Text - 256; len(compact) > limit {
		return fail(http.StatusRequestEntityTooLarge, "plan_too_large", "the plan is %d bytes; at most %d, what the log records of a plan (shorten its instructions and context, or split it into jobs)", len(compact), limit)
	}
	recorded, _ := json.Marshal(string(compact))
	size := len(recorded) + planEventMargin
	for _, t := range shape.Tasks {
		size += len(t.ID) + len(t.To) + len(t.Needs) + 32
	}
	if maxPayload := s.maxPayload(); size > maxPayload {
		return fail(http.StatusRequestEntityTooLarge, "plan_too_large",
			"the plan's job record would be %d bytes, and a log message holds at most %d (the NATS server's max_payload): shorten the plan's instructions and context, or split it into jobs", size, maxPayload)
	}
	return nil
}

// maxPayload is the largest message the NATS server takes: its
// max_payload, or NATS's default of 1 MiB without a connection.
func (s *Server) maxPayload() int {
	if s.cfg.NC != nil {
		if n := s.cfg.NC.MaxPayload(); n > 0 {
			return int(n)
		}
	}
	return 1 << 20
}

// JobStart is the body of POST /jobs.
type JobStart struct {
	// Plan is the plan (`fleetd orchestrate`'s file, as JSON); empty
	// resumes Job from the log.
	Plan json.RawMessage `json:"plan,omitempty"`
	Job  string          `json:"job,omitempty"`
	// ParentJob is the job this one is a sub-job of (a main planning the
	// task it was given), recorded in the job's created event.
	ParentJob string `json:"parent_job,omitempty"`
	// From is who the job's turns are from; FromRole its role when it is
	// no agent of the roster. A plan's sessions are spawned only for roles
	// that role may spawn (may_spawn).
	From     string `json:"from"`
	FromRole string `json:"from_role,omitempty"`
	// MaySpawn is filled in by the shim from the caller's role, for the
	// runner; a client's value is ignored.
	MaySpawn []string `json:"-"`
}

// JobAccepted answers POST /jobs: the job runs.
type JobAccepted struct {
	Job string `json:"job"`
}

// JobState is the answer to GET /jobs/{job}: where a job stands, task by
// task, and its rollup once done.
type JobState struct {
	Job  string `json:"job"`
	Goal string `json:"goal,omitempty"`
	// Status is running (this host runs it), stopped (neither running
	// here nor done: POST /jobs with its id resumes it), ok or failed.
	Status string      `json:"status"`
	Tasks  []TaskState `json:"tasks"`
	Rollup string      `json:"rollup,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// TaskState is one task of a JobState.
type TaskState struct {
	ID    string `json:"id"`
	To    string `json:"to"`
	State string `json:"state"`
	Agent string `json:"agent,omitempty"`
	Turn  string `json:"turn,omitempty"`
	Error string `json:"error,omitempty"`
}

// postJobs starts a job (202 with its id).
func (s *Server) postJobs(w http.ResponseWriter, r *http.Request) {
	var req JobStart
	if aerr := decodeBody(r, &req); aerr != nil {
		writeError(w, aerr)
		return
	}
	if s.cfg.Jobs == nil {
		writeError(w, fail(http.StatusServiceUnavailable, "no_jobs", "this fleetd runs no jobs"))
		return
	}
	for field, job := range map[string]string{"job": req.Job, "parent_job": req.ParentJob} {
		if err := events.ValidToken(job); job != "" && err != nil {
			writeError(w, fail(http.StatusBadRequest, "bad_job", "%s: %v", field, err))
			return
		}
	}
	if len(req.Plan) == 0 && req.Job == "" {
		writeError(w, fail(http.StatusBadRequest, "bad_plan", `give a "plan", or the "job" to resume`))
		return
	}
	if len(req.Plan) > 0 {
		if aerr := s.checkPlan(req.Plan); aerr != nil {
			writeError(w, aerr)
			return
		}
	}
	if err := events.ValidAgentID(req.From); err != nil {
		writeError(w, fail(http.StatusBadRequest, "bad_from", `"from" names the caller: %v`, err))
		return
	}
	// The caller's role decides what sessions the job may spawn; a caller
	// the shim cannot place spawns none, but may still run a plan over
	// live agents, as it may send to them.
	if caller, aerr := s.callerRole(req.From, req.FromRole); aerr == nil {
		req.MaySpawn = caller.MaySpawn
	} else if aerr.body.Code != "not_allowed" || req.FromRole != "" {
		writeError(w, aerr)
		return
	}
	if aerr := s.healthError(); aerr != nil {
		writeError(w, aerr)
		return
	}
	job, err := s.cfg.Jobs.Start(r.Context(), req)
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, JobAccepted{Job: job})
	case errors.Is(err, ErrBadPlan):
		writeError(w, fail(http.StatusBadRequest, "bad_plan", "%v", err))
	case errors.Is(err, ErrUnknownJob):
		writeError(w, fail(http.StatusNotFound, "unknown_job", "%v", err))
	default:
		if e := logError(err); e != nil {
			writeError(w, e)
			return
		}
		writeError(w, fail(http.StatusInternalServerError, "job_failed", "%v", err))
	}
}

// cancelJob ends a job for good (200 with what it did): 404 for a job
// the log lacks, 409 job_done for one that had ended.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	var req JobCancel
	if aerr := decodeBody(r, &req); aerr != nil {
		writeError(w, aerr)
		return
	}
	if s.cfg.Jobs == nil {
		writeError(w, fail(http.StatusServiceUnavailable, "no_jobs", "this fleetd runs no jobs"))
		return
	}
	job := r.PathValue("job")
	if err := events.ValidToken(job); err != nil {
		writeError(w, fail(http.StatusBadRequest, "bad_job", "job: %v", err))
		return
	}
	if err := events.ValidAgentID(req.From); err != nil {
		writeError(w, fail(http.StatusBadRequest, "bad_from", `"from" names the caller: %v`, err))
		return
	}
	if aerr := s.healthError(); aerr != nil {
		writeError(w, aerr)
		return
	}
	res, err := s.cfg.Jobs.Cancel(r.Context(), job, req.From)
	switch {
	case err == nil:
		res.Job = job
		writeJSON(w, http.StatusOK, res)
	case errors.Is(err, ErrUnknownJob):
		writeError(w, fail(http.StatusNotFound, "unknown_job", "%v", err))
	case errors.Is(err, ErrJobDone):
		writeError(w, fail(http.StatusConflict, "job_done", "%v", err))
	default:
		if e := logError(err); e != nil {
			writeError(w, e)
			return
		}
		writeError(w, fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err))
	}
}

// getJob answers a job's state, long-polling up to wait while this host
// runs it.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	// A job this host has just started may not be in the log yet: it is
	// known all the same.
	job, aerr := r.PathValue("job"), (*apiError)(nil)
	if _, running := s.runningJob(job); !running {
		job, aerr = s.jobOf(r)
	}
	var wait time.Duration
	if aerr == nil {
		wait, aerr = s.waitParam(r)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if wait > 0 {
		if done, ok := s.runningJob(job); ok {
			t := time.NewTimer(wait)
			select {
			case <-done:
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
		}
	}
	st, err := s.jobState(r.Context(), job)
	if err != nil {
		writeError(w, fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// runningJob is Jobs.Running, false without Jobs.
func (s *Server) runningJob(job string) (<-chan struct{}, bool) {
	if s.cfg.Jobs == nil {
		return nil, false
	}
	return s.cfg.Jobs.Running(job)
}

// waitParam is the request's ?wait= duration, bounded by MaxTimeout.
func (s *Server) waitParam(r *http.Request) (time.Duration, *apiError) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fail(http.StatusBadRequest, "bad_wait", "wait %q: want a duration such as 30s", v)
	}
	return min(d, s.cfg.MaxTimeout), nil
}

// jobState folds the job from the log.
func (s *Server) jobState(ctx context.Context, job string) (JobState, error) {
	j, err := jobs.LoadJob(ctx, s.cfg.Log, job, 0)
	if err != nil {
		return JobState{}, err
	}
	st := JobState{Job: job, Status: "stopped", Tasks: []TaskState{}}
	if _, ok := s.runningJob(job); ok {
		st.Status = "running"
	}
	if j.Created != nil {
		st.Goal = j.Created.Goal
		for _, t := range j.Created.Tasks {
			ts := j.Tasks[t.ID]
			state := ts.State
			if state == "" {
				state = "waiting"
			}
			st.Tasks = append(st.Tasks, TaskState{ID: t.ID, To: t.To, State: state, Agent: ts.Agent, Turn: ts.Turn, Error: ts.Error})
		}
	}
	if j.Done != nil && st.Status != "running" {
		st.Status, st.Rollup, st.Error = j.Done.Status, j.Done.Result, j.Done.Error
	}
	return st, nil
}

// StartJob starts a job (POST /jobs) and returns its id.
func (c *Client) StartJob(ctx context.Context, j JobStart) (JobAccepted, error) {
	var acc JobAccepted
	err := c.Do(ctx, http.MethodPost, "/jobs", j, &acc)
	return acc, err
}

// CancelJob ends a job for good (POST /jobs/{job}/cancel).
func (c *Client) CancelJob(ctx context.Context, job, from string) (JobCancelled, error) {
	var res JobCancelled
	err := c.Do(ctx, http.MethodPost, "/jobs/"+url.PathEscape(job)+"/cancel", JobCancel{From: from}, &res)
	return res, err
}

// Job reads a job's state, long-polling up to wait (empty: at once) while
// it runs.
func (c *Client) Job(ctx context.Context, job, wait string) (JobState, error) {
	var st JobState
	err := c.Do(ctx, http.MethodGet, longPoll("/jobs/"+url.PathEscape(job), wait), nil, &st)
	return st, err
}
