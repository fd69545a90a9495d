package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/orchestrator"
)

// answerTurns plays every agent: each queued turn is typed and replied
// with "ok: <first line of the prompt>".
func answerTurns(t *testing.T, ctx context.Context, log events.Log) {
	f, err := log.Follow(ctx, events.Query{Subjects: []string{"fleet.agent.*.queued"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range f.Events() {
			q := ev.Data.(events.AgentQueued)
			line, _, _ := strings.Cut(q.Text, "\n")
			for _, d := range []events.Data{events.AgentTyped{Pane: "p", Method: "agent.prompt"}, events.AgentReplied{Reply: "ok: " + line}} {
				if _, err := log.Append(ctx, events.Event{Subject: ev.Subject, CorrelationID: ev.ID, Data: d}); err != nil && ctx.Err() == nil {
					t.Errorf("answer: %v", err)
				}
			}
		}
	}()
	t.Cleanup(func() { f.Stop(); wg.Wait() })
}

func TestOrchestrateCommandRunsAPlanOverNATS(t *testing.T) {
	ctx := context.Background()
	ns := natstest.Start(t, natstest.WithTCP())
	if _, err := events.EnsureStream(ctx, ns.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	log := events.New(ns.JS, events.Options{})
	answerTurns(t, ctx, log)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	plan := `{"goal":"cli","context":[{"key":"spec","text":"the spec"}],"tasks":[
		{"id":"a","to":"w-1","instructions":"first","context":{"keys":["spec"]}},
		{"id":"b","to":"w-2","instructions":"second","needs":["a"]}]}`
	if err := os.WriteFile(planFile, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Globals{Host: "h1", NATS: ns.ClientURL(), LogLevel: "error"}
	if err := (&OrchestrateCmd{Plan: planFile, Job: "cli1", Budget: 1024}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	done := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.job.cli1.done"}})
	if len(done) != 1 || done[0].Data.(events.JobDone).Result != "ok: second" {
		t.Fatalf("done = %+v, want the rollup of b", done)
	}
	// Resuming the finished job sends nothing more.
	if err := (&OrchestrateCmd{Resume: "cli1", Budget: 1024}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if q := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.*.queued"}}); len(q) != 2 {
		t.Errorf("%d turns queued, want 2", len(q))
	}
	// Without --spawn a session nobody runs cannot be started.
	if err := os.WriteFile(planFile, []byte(`{"tasks":[{"id":"a","to":"session:main-x","instructions":"x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := (&OrchestrateCmd{Plan: planFile, Job: "cli2", SessionRole: "main"}).Run(ctx, g)
	if !errors.Is(err, orchestrator.ErrNoSpawner) {
		t.Errorf("err = %v, want ErrNoSpawner", err)
	}
	if err := (&OrchestrateCmd{}).Run(ctx, g); err == nil {
		t.Error("no plan and no --resume was accepted")
	}
}
