package leadshim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// fakeJobs records what the shim asks of a job runner.
type fakeJobs struct {
	mu        sync.Mutex
	started   []leadshim.JobStart
	cancelled []string
	cancelErr error
}

func (j *fakeJobs) Start(_ context.Context, req leadshim.JobStart) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.started = append(j.started, req)
	return "J1", nil
}

func (j *fakeJobs) Running(string) (<-chan struct{}, bool) { return nil, false }

func (j *fakeJobs) Cancel(_ context.Context, job, from string) (leadshim.JobCancelled, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cancelled = append(j.cancelled, job+" by "+from)
	return leadshim.JobCancelled{Stopped: true, Turns: []string{"T1"}, Skipped: []string{"a"}, Typed: []string{}}, j.cancelErr
}

func (j *fakeJobs) starts() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.started)
}

// planBody is a POST /jobs body with n tasks, each with instructions of
// size bytes.
func planBody(t *testing.T, n, size int) string {
	t.Helper()
	type task struct {
		ID           string `json:"id"`
		To           string `json:"to"`
		Instructions string `json:"instructions"`
	}
	plan := struct {
		Goal  string `json:"goal"`
		Tasks []task `json:"tasks"`
	}{Goal: "g"}
	for i := range n {
		plan.Tasks = append(plan.Tasks, task{ID: fmt.Sprintf("t%d", i), To: "w1", Instructions: strings.Repeat("x", size)})
	}
	b, err := json.Marshal(map[string]any{"plan": plan, "from": "lead"})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A plan whose job record could not be written (over a NATS message,
// once re-encoded into its created event) or with more tasks than a job
// may run is refused at the door, saying why, and nothing starts: before,
// both were accepted (202) and the job then unknown (404), the reason
// only in the log.
func TestAPlanTooLargeOrTooManyTasksIsRefusedAtTheDoor(t *testing.T) {
	f := fleettest.New(t)
	jobs := &fakeJobs{}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Jobs = jobs })

	if status, b := fleettest.Do(t, http.MethodPost, base+"/jobs", planBody(t, 3, 100)); status != http.StatusAccepted {
		t.Fatalf("an ordinary plan: %d %s", status, b)
	}
	// Well under the body limit (8 MiB), over what the log records of a
	// plan.
	status, b := fleettest.Do(t, http.MethodPost, base+"/jobs", planBody(t, 1, 1100<<10))
	if e := errorOf(t, b); status != http.StatusRequestEntityTooLarge || e.Code != "plan_too_large" {
		t.Errorf("a 1100 KiB plan: %d %s, want 413 plan_too_large", status, b)
	}
	// A plan the log's text limit takes, but whose created event is over
	// the server's max_payload: NATS's default 1 MiB (a shim with no NATS
	// connection assumes it; fleetd's embedded server takes 4 MiB).
	_, small := newShim(t, f, func(c *leadshim.Config) { c.Jobs, c.NC = jobs, nil })
	status, b = fleettest.Do(t, http.MethodPost, small+"/jobs", planBody(t, 1, 1030<<10))
	if e := errorOf(t, b); status != http.StatusRequestEntityTooLarge || e.Code != "plan_too_large" || !strings.Contains(e.Message, "max_payload") {
		t.Errorf("a 1030 KiB plan under a 1 MiB max_payload: %d %s, want 413 plan_too_large naming max_payload", status, b)
	}
	status, b = fleettest.Do(t, http.MethodPost, base+"/jobs", planBody(t, leadshim.DefaultMaxPlanTasks+1, 1))
	if e := errorOf(t, b); status != http.StatusBadRequest || e.Code != "too_many_tasks" {
		t.Errorf("%d tasks: %d %s, want 400 too_many_tasks", leadshim.DefaultMaxPlanTasks+1, status, b)
	}
	if got := jobs.starts(); got != 1 {
		t.Errorf("the runner started %d jobs, want only the ordinary one", got)
	}
}

// POST /jobs/{job}/cancel asks the runner to cancel on behalf of its
// caller and says what it did; a job that had ended is 409, an unknown
// one 404.
func TestCancelAJob(t *testing.T) {
	f := fleettest.New(t)
	jobs := &fakeJobs{}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Jobs = jobs })
	client := leadshim.NewClient(base, "")

	res, err := client.CancelJob(fleettest.Ctx(t), "J1", "lead")
	if err != nil {
		t.Fatal(err)
	}
	if res.Job != "J1" || !res.Stopped || len(res.Turns) != 1 || len(res.Skipped) != 1 {
		t.Errorf("cancel answered %+v", res)
	}
	if jobs.cancelled[0] != "J1 by lead" {
		t.Errorf("the runner was asked %v", jobs.cancelled)
	}
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: J1 ended ok", leadshim.ErrJobDone), http.StatusConflict, "job_done"},
		{fmt.Errorf("%w: J1", leadshim.ErrUnknownJob), http.StatusNotFound, "unknown_job"},
	} {
		jobs.cancelErr = c.err
		status, b := fleettest.Do(t, http.MethodPost, base+"/jobs/J1/cancel", `{"from":"lead"}`)
		if e := errorOf(t, b); status != c.status || e.Code != c.code {
			t.Errorf("%v: %d %s, want %d %s", c.err, status, b, c.status, c.code)
		}
	}
	if status, b := fleettest.Do(t, http.MethodPost, base+"/jobs/J1/cancel", `{}`); status != http.StatusBadRequest {
		t.Errorf("a cancel without from: %d %s", status, b)
	}
}
