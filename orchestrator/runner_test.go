package orchestrator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
)

// runner starts a Runner over the fleet, with its spawner, for the test.
func (f *fleet) runner() *orchestrator.Runner {
	f.t.Helper()
	r, err := orchestrator.NewRunner(orchestrator.RunnerConfig{Log: f.log, Views: f.views, Spawner: f.spawner})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	f.t.Cleanup(func() { cancel(); <-done })
	return r
}

// finished waits for this runner's run of job to end and folds the job.
func (f *fleet) finished(r *orchestrator.Runner, job string) *jobs.Job {
	f.t.Helper()
	if done, ok := r.Running(job); ok {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			f.t.Fatalf("job %s still running after 30s", job)
		}
	}
	j, err := jobs.LoadJob(f.ctx, f.log, job, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

func TestARunnerSpawnsOnlyTheSessionsItsCallerMay(t *testing.T) {
	f := newFleet(t, func(_ context.Context, agent, _ string, tr lifecycle.Turn) string { return agent + " did it" })
	r := f.runner()
	plan := []byte(`{"goal":"g","sessions":[{"name":"s1","role":"w"}],"tasks":[{"id":"a","to":"session:s1","instructions":"do a"}]}`)

	refused, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: plan, From: "lead", MaySpawn: []string{"main"}})
	if err != nil {
		t.Fatal(err)
	}
	if j := f.finished(r, refused); j.Done == nil || j.Done.Status != "failed" || !strings.Contains(j.Done.Error, "may not spawn") {
		t.Errorf("job %s ended %+v, want failed: lead may not spawn w", refused, j.Done)
	}
	if spawns, _ := f.spawner.recorded(); len(spawns) != 0 {
		t.Fatalf("spawned %+v for a caller that may not", spawns)
	}

	allowed, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: plan, From: "lead", MaySpawn: []string{"w"}})
	if err != nil {
		t.Fatal(err)
	}
	j := f.finished(r, allowed)
	if j.Done == nil || j.Done.Status != "ok" || j.Done.Result != "s1-1 did it" {
		t.Errorf("job %s ended %+v, want ok with s1-1's rollup", allowed, j.Done)
	}
	spawns, _ := f.spawner.recorded()
	if len(spawns) != 1 || spawns[0].Role != "w" || spawns[0].Parent != "lead" || spawns[0].Tier != 1 {
		t.Errorf("spawns = %+v, want one of role w for lead, one tier below it", spawns)
	}
	// The turns are the caller's.
	for _, ev := range f.all("fleet.agent.*.queued") {
		if q := ev.Data.(events.AgentQueued); q.Job == allowed && q.From != "lead" {
			t.Errorf("task %s's turn is from %q, want lead", q.Task, q.From)
		}
	}
}

func TestARunnerRefusesBadPlansAndUnknownJobs(t *testing.T) {
	f := newFleet(t, func(context.Context, string, string, lifecycle.Turn) string { return "ok" })
	r := f.runner()
	if _, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: []byte(`{"goal":"g","tasks":[]}`), From: "lead"}); !errors.Is(err, orchestrator.ErrInvalidPlan) {
		t.Errorf("a plan without tasks: %v, want ErrInvalidPlan", err)
	}
	if _, err := r.Start(f.ctx, orchestrator.RunRequest{Job: "NOPE", From: "lead"}); !errors.Is(err, orchestrator.ErrJobUnknown) {
		t.Errorf("resuming an unknown job: %v, want ErrJobUnknown", err)
	}
	if _, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: []byte(`{"goal":"g","tasks":[{"id":"a","to":"w-1","instructions":"x"}]}`), Job: "bad job"}); err == nil {
		t.Error("a bad job id was taken")
	}
}

func TestARunnerTakesNoJobOnceItsRunHasReturned(t *testing.T) {
	f := newFleet(t, func(context.Context, string, string, lifecycle.Turn) string { return "ok" })
	r, err := orchestrator.NewRunner(orchestrator.RunnerConfig{Log: f.log, Views: f.views})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	plan := []byte(`{"goal":"g","tasks":[{"id":"a","to":"w-1","instructions":"x"}]}`)
	if _, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: plan, From: "lead"}); !errors.Is(err, orchestrator.ErrRunnerStopped) {
		t.Errorf("Start after Run returned: %v, want ErrRunnerStopped", err)
	}
}
