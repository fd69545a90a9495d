package orchestrator_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
)

// syncBuffer is a bytes.Buffer the run's tasks may write to at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A client run folds the log itself, spawns its sessions one tier below
// its sender, says how to resume the job, and a resume finds the result
// without sending again.
func TestAClientRunFoldsItsOwnViewsAndResumes(t *testing.T) {
	f := newFleet(t, func(_ context.Context, agent, _ string, _ lifecycle.Turn) string { return agent + " did it" })
	plan, err := orchestrator.ParsePlan([]byte(`{"goal":"g","sessions":[{"name":"s1","role":"w"}],"tasks":[{"id":"a","to":"session:s1","instructions":"do a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cfg := orchestrator.ClientConfig{Log: f.log, From: "lead", Tier: 1, Out: &out,
		Spawner: func(projections.Views) orchestrator.Spawner { return f.spawner }}
	res, err := orchestrator.RunClient(f.ctx, cfg, plan, "j1", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Rollup, "s1-1 did it"; got != want {
		t.Errorf("rollup %q, want %q", got, want)
	}
	if spawns, _ := f.spawner.recorded(); len(spawns) != 1 || spawns[0].Tier != 2 || spawns[0].Parent != "lead" {
		t.Errorf("spawns %+v, want one for lead at tier 2", spawns)
	}
	for _, want := range []string{"job j1: g (resume with: fleetd orchestrate --resume j1)\n", " a            replied    ← s1-1", "job j1 done: ok\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out = syncBuffer{}
	res, err = orchestrator.RunClient(f.ctx, cfg, orchestrator.Plan{}, "", "j1")
	if err != nil || res.Rollup != "s1-1 did it" || !strings.HasPrefix(out.String(), "resuming job j1\n") {
		t.Errorf("resume: %+v, %v\n%s", res, err, out.String())
	}
	if got := f.queuedByTask("j1")["a"]; got != 1 {
		t.Errorf("task a queued %d times, want once", got)
	}
}
