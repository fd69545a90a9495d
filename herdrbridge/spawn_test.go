package herdrbridge_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
)

// Four spawners starting 50 agents each at once: every spawn succeeds,
// each agent is registered before its command is typed into its pane (so
// its hooks, which the command starts, can only write after it), and
// every agent's first event is its registration.
func TestParallelSpawnsNeverRaceTheirAgentsHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("200 panes")
	}
	f := newFleet(t)
	b := f.newBridge(nil)
	ctx := context.Background()
	const spawners, each = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, spawners*each)
	for s := range spawners {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("w-%d-%d", s, i)
				if _, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: name}); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					continue
				}
				// What the agent's SessionStart hook does the moment it
				// runs: it may only ever follow the registration.
				if _, err := f.log.Append(ctx, events.Event{Subject: name, Data: events.AgentSession{SessionID: "s-" + name, State: "started"}}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	first := map[string]events.Type{}
	for _, ev := range f.read("fleet.agent.>") {
		if _, seen := first[ev.Subject]; !seen {
			first[ev.Subject] = ev.Type()
		}
	}
	if len(first) != spawners*each {
		t.Errorf("%d agents in the log, want %d", len(first), spawners*each)
	}
	for agent, typ := range first {
		if typ != events.TypeAgentRegistered {
			t.Errorf("%s: first event %s, want its registration", agent, typ)
		}
	}
	for _, ev := range f.read("fleet.agent.*.registered") {
		reg := ev.Data.(events.AgentRegistered)
		launched := f.typedAt(reg.Pane, "LAUNCHED")
		if launched.IsZero() || !ev.Time.Before(launched) {
			t.Errorf("%s: registered at %s, its command typed at %s: the hooks could write first", reg.Agent,
				ev.Time.Format("15:04:05.000000"), launched.Format("15:04:05.000000"))
		}
	}
}

// A spawn whose launch herdr refuses leaves a registration closed by an
// exit (the agent is not live, its id can be spawned again) and no pane.
func TestAFailedLaunchLeavesNothingLive(t *testing.T) {
	f := newFleet(t)
	b := f.newBridge(nil)
	ctx := context.Background()
	f.herdr.FailNext("pane.send_input", "pane_send_failed", "write to pane failed", 1)
	if _, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: "w-1"}); err == nil {
		t.Fatal("spawn succeeded though its launch failed")
	}
	var kinds []events.Type
	for _, ev := range f.history("w-1") {
		kinds = append(kinds, ev.Type())
	}
	if len(kinds) != 2 || kinds[0] != events.TypeAgentRegistered || kinds[1] != events.TypeAgentExited {
		t.Errorf("w-1's events %v, want registered then exited", kinds)
	}
	if snap, err := f.client.Snapshot(ctx); err != nil || len(snap.Panes) != 0 {
		t.Errorf("panes left: %v %v", snap.Panes, err)
	}
	if _, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: "w-1"}); err != nil {
		t.Errorf("spawning the id again: %v", err)
	}
	var already error = herdrbridge.ErrAgentExists
	if _, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-sh", Name: "w-1"}); !errors.Is(err, already) {
		t.Errorf("spawning a live id: %v, want ErrAgentExists", err)
	}
}
