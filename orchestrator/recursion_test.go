package orchestrator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
)

// mainAgent plays a main at tier 1. "delegate w1,w2: SUBJECT" runs a
// sub-plan over two workers through its own Orchestrator and session
// manager (tier 2, parent = itself), seeding the sub-job with the slice it
// was given and handing worker i the i-th item of it; its reply is the
// sub-job's rollup. "summarise" replies with the texts of its slice.
func mainAgent(f *fleet, mu *sync.Mutex, subs map[string]*orchestrator.Sessions) reactFunc {
	return func(ctx context.Context, agent, role string, t lifecycle.Turn) string {
		if role != "main" {
			return worker(ctx, agent, role, t)
		}
		instr, blocks := parsePrompt(t.Text)
		line := firstLine(instr)
		if line == "summarise" {
			var texts []string
			for _, b := range blocks {
				texts = append(texts, b.Text)
			}
			return "summary:\n" + strings.Join(texts, "\n")
		}
		spec, subject, ok := strings.Cut(strings.TrimPrefix(line, "delegate "), ": ")
		if !ok {
			return "cannot parse: " + line
		}
		sub := orchestrator.Plan{Goal: subject}
		for _, b := range blocks {
			sub.Context = append(sub.Context, orchestrator.ContextItem{Key: b.Key, Tags: strings.Split(b.Tags, ","), Text: b.Text})
		}
		for i, w := range strings.Split(spec, ",") {
			task := orchestrator.Task{ID: w, To: "session:" + w, Instructions: fmt.Sprintf("%s (%s)", subject, w)}
			if i < len(blocks) {
				task.Context.Keys = []string{blocks[i].Key}
			}
			sub.Tasks = append(sub.Tasks, task)
		}
		mu.Lock()
		s, ok := subs[agent]
		if !ok {
			s = f.sessions(orchestrator.SessionConfig{Role: "worker", Tier: 2, Parent: agent})
			subs[agent] = s
		}
		mu.Unlock()
		o := f.orchestrator(orchestrator.Config{Sessions: s, From: agent, ParentJob: t.Job})
		res, err := o.Run(ctx, sub, t.Job+"-"+t.Task)
		if err != nil {
			return "sub-plan failed: " + err.Error()
		}
		return res.Rollup
	}
}

func TestThreeLevelRunSlicesEveryTurnAndRollsUpEveryWorker(t *testing.T) {
	var mu sync.Mutex
	subs := map[string]*orchestrator.Sessions{}
	var f *fleet
	f = newFleet(t, func(ctx context.Context, agent, role string, turn lifecycle.Turn) string {
		return mainAgent(f, &mu, subs)(ctx, agent, role, turn)
	})
	plan := orchestrator.Plan{
		Goal: "build the thing",
		Context: []orchestrator.ContextItem{
			{Key: "spec-a", Tags: []string{"a"}, Text: "alpha spec"},
			{Key: "spec-b", Tags: []string{"b"}, Text: "beta spec"},
			{Key: "shared", Tags: []string{"a", "b"}, Text: "shared conventions"},
			{Key: "noise", Tags: []string{"x"}, Text: "unrelated"},
		},
		Tasks: []orchestrator.Task{
			{ID: "a", To: "session:main-a", Instructions: "delegate wa1,wa2: build part A", Context: orchestrator.ContextSpec{Tags: []string{"a"}}},
			{ID: "b", To: "session:main-b", Instructions: "delegate wb1,wb2: build part B", Context: orchestrator.ContextSpec{Tags: []string{"b"}}},
			{ID: "c", To: "session:main-a", Instructions: "summarise", Needs: []string{"b", "a"}, Context: orchestrator.ContextSpec{Keys: []string{"shared"}}},
		},
	}
	var pmu sync.Mutex
	var progress []string
	o := f.orchestrator(orchestrator.Config{
		Sessions: f.sessions(orchestrator.SessionConfig{Tier: 1, Parent: "orchestrator"}),
		OnProgress: func(p orchestrator.Progress) {
			pmu.Lock()
			progress = append(progress, p.Task+":"+p.State)
			pmu.Unlock()
		},
	})
	res, err := o.Run(f.ctx, plan, "job1")
	if err != nil {
		t.Fatal(err)
	}

	// The final rollup carries every worker's result, through two levels.
	for _, w := range []string{"build part A (wa1)", "build part A (wa2)", "build part B (wb1)", "build part B (wb2)"} {
		if !strings.Contains(res.Rollup, "done: "+w) {
			t.Errorf("final rollup misses worker result %q:\n%s", w, res.Rollup)
		}
	}
	if !strings.HasPrefix(res.Rollup, "summary:\n") {
		t.Errorf("final rollup = %q, want the sink task c's reply", res.Rollup)
	}

	// Every turn's prompt carries exactly the items its sliced event names,
	// in order — at both levels.
	type key struct{ job, task string }
	sliced := map[key][]string{}
	for _, ev := range f.all("fleet.job.*.sliced") {
		d := ev.Data.(events.JobSliced)
		sliced[key{ev.Subject, d.Task}] = d.Items
	}
	queued := 0
	for _, ev := range f.all("fleet.agent.*.queued") {
		q := ev.Data.(events.AgentQueued)
		queued++
		want, ok := sliced[key{q.Job, q.Task}]
		if !ok {
			t.Errorf("turn %s for %s/%s has no sliced event", ev.ID, q.Job, q.Task)
			continue
		}
		if _, blocks := parsePrompt(q.Text); !slices.Equal(keysOf(blocks), want) {
			t.Errorf("%s/%s prompt carries %v, sliced event names %v", q.Job, q.Task, keysOf(blocks), want)
		}
	}
	if got, want := queued, 3+2+2; got != want {
		t.Errorf("%d turns queued, want %d (3 main tasks, 4 worker tasks)", got, want)
	}
	// The mains got exactly their scope: newest tag match first, rollups of
	// needs in plan order, never the unrelated item.
	for k, want := range map[key][]string{
		{"job1", "a"}:     {"shared", "spec-a"},
		{"job1", "b"}:     {"shared", "spec-b"},
		{"job1", "c"}:     {"rollup:a", "rollup:b", "shared"},
		{"job1-a", "wa1"}: {"shared"},
		{"job1-a", "wa2"}: {"spec-a"},
		{"job1-b", "wb2"}: {"spec-b"},
	} {
		if got := sliced[k]; !slices.Equal(got, want) {
			t.Errorf("slice of %v = %v, want %v", k, got, want)
		}
	}

	// Sessions at both tiers: main-a is spawned once and reused for c;
	// workers are spawned at tier 2 under the main that delegated.
	spawns, _ := f.spawner.recorded()
	tiers := map[string]string{}
	for _, s := range spawns {
		tiers[s.Agent] = fmt.Sprintf("%s tier=%d parent=%s", s.Role, s.Tier, s.Parent)
	}
	want := map[string]string{
		"main-a-1": "main tier=1 parent=orchestrator", "main-b-1": "main tier=1 parent=orchestrator",
		"wa1-1": "worker tier=2 parent=main-a-1", "wa2-1": "worker tier=2 parent=main-a-1",
		"wb1-1": "worker tier=2 parent=main-b-1", "wb2-1": "worker tier=2 parent=main-b-1",
	}
	if len(spawns) != len(want) {
		t.Errorf("spawned %v, want %v", tiers, want)
	}
	for a, w := range want {
		if tiers[a] != w {
			t.Errorf("spawn %s = %q, want %q", a, tiers[a], w)
		}
	}

	// The sub-jobs are linked to their parent and the job ended ok.
	for _, ev := range f.all("fleet.job.*.created") {
		if d := ev.Data.(events.JobCreated); ev.Subject != "job1" && d.Parent != "job1" {
			t.Errorf("sub-job %s parent = %q, want job1", ev.Subject, d.Parent)
		}
	}
	done := f.all("fleet.job.job1.done")
	if len(done) != 1 || done[0].Data.(events.JobDone).Status != "ok" || done[0].Data.(events.JobDone).Result != res.Rollup {
		t.Errorf("job1 done events = %+v", done)
	}
	pmu.Lock()
	defer pmu.Unlock()
	if i, j := slices.Index(progress, "a:replied"), slices.Index(progress, "c:sent"); i < 0 || j < i {
		t.Errorf("progress %v: c sent before a replied", progress)
	}
}
