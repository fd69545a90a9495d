package orchestrator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/roles"
)

// A job's task to an agent out of budget — by name, or by session: — is
// not queued (so never typed): the task fails at once, its record saying
// budget_exhausted, which limit and frees_at, and the job fails with it.
// (Before, a job's turns went round the budgets that POST /message
// enforces: typed and answered at 143 tokens of a limit of 1.)
func TestAJobsTaskToAnAgentOutOfBudgetFailsSayingWhy(t *testing.T) {
	f := newFleet(t, func(context.Context, string, string, lifecycle.Turn) string { return "done" })
	rc, err := roles.Parse([]byte(`{"roles": {
		"w": {"agent_budget": {"tokens_per_hour": 1}},
		"m": {"budget": {"tokens_per_hour": 1}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// w-1 spent its own budget; m-0 spent role m's, which a session's
	// new agent of role m shares.
	for _, a := range []orchestrator.SpawnSpec{{Agent: "w-1", Role: "w", Tier: 2}, {Agent: "m-0", Role: "m", Tier: 1}} {
		if err := f.spawner.Spawn(f.ctx, a); err != nil {
			t.Fatal(err)
		}
		ack, err := f.log.Append(f.ctx, events.Event{Subject: a.Agent, Data: events.AgentReplied{Reply: "spent", Tokens: events.Tokens{In: 100, Out: 43}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.views.WaitSeq(f.ctx, ack.Seq); err != nil {
			t.Fatal(err)
		}
	}
	r, err := orchestrator.NewRunner(orchestrator.RunnerConfig{Log: f.log, Views: f.views, Spawner: f.spawner,
		Budgets: &budget.Checker{Roles: rc, Views: f.views}})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "runner", r.Run)

	for _, tc := range []struct{ name, plan, limit string }{
		{"by name", `{"goal":"g","tasks":[{"id":"a","to":"w-1","instructions":"do a"}]}`, "agent w-1 tokens_per_hour"},
		{"by session", `{"goal":"g","sessions":[{"name":"s1","role":"m"}],"tasks":[{"id":"a","to":"session:s1","instructions":"do a"}]}`, "role m tokens_per_hour"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := r.Start(f.ctx, orchestrator.RunRequest{Plan: []byte(tc.plan), From: "lead", MaySpawn: []string{"m"}})
			if err != nil {
				t.Fatal(err)
			}
			j := f.finished(r, job)
			task := j.Tasks["a"]
			if task.State != events.TaskFailed || !strings.Contains(task.Error, "budget_exhausted") ||
				!strings.Contains(task.Error, tc.limit) || !strings.Contains(task.Error, "frees_at ") {
				t.Errorf("task a: %+v, want failed with budget_exhausted, %s and frees_at", task, tc.limit)
			}
			if j.Done == nil || j.Done.Status != "failed" || !strings.Contains(j.Done.Error, "budget_exhausted") {
				t.Errorf("job ended %+v, want failed for the budget", j.Done)
			}
			if n := f.queuedByTask(job)["a"]; n != 0 {
				t.Errorf("task a was queued %d times for an agent out of budget", n)
			}
		})
	}
	for _, ev := range f.all("fleet.agent.*.typed") {
		t.Errorf("typed into %s while out of budget", ev.Subject)
	}
}
