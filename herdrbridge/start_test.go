package herdrbridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/roles"
)

func startRoles(t *testing.T) roles.Config {
	t.Helper()
	return mustRoles(t, `{"roles":{
		"w-missing":{"command":["no-such-agent-binary-here","--settings","{settings}"]},
		"w-silent":{"command":["sh","-c","echo UP; exec sleep 60"]}}}`)
}

func TestASpawnThatWaitsFailsWithWhatThePaneShowsAndLeavesNothing(t *testing.T) {
	f := newFleet(t)
	b := f.newBridge(func(c *herdrbridge.BridgeConfig) { c.Roles = startRoles(t) })
	_, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-missing", Name: "w-1", Wait: 20 * time.Second})
	if !errors.Is(err, herdrbridge.ErrNotStarted) || !contains(err.Error(), "not found") {
		t.Fatalf("spawn of a command that does not exist: %v, want ErrNotStarted saying the pane's 'not found'", err)
	}
	var exited events.AgentExited
	var reg events.AgentRegistered
	for _, ev := range f.history("w-1") {
		switch d := ev.Data.(type) {
		case events.AgentExited:
			exited = d
		case events.AgentRegistered:
			reg = d
		}
	}
	if !exited.StartFailed || !contains(exited.Reason, "not found") {
		t.Errorf("exited %+v, want start_failed with the pane's words", exited)
	}
	if _, err := f.client.Pane(context.Background(), reg.Pane); err == nil {
		t.Errorf("the failed spawn's pane %s is still open", reg.Pane)
	}
}

func TestASpawnThatWaitsForASessionThatNeverStartsFailsAfterTheWait(t *testing.T) {
	f := newFleet(t)
	b := f.newBridge(func(c *herdrbridge.BridgeConfig) { c.Roles = startRoles(t) })
	_, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-silent", Name: "w-1", Wait: 1500 * time.Millisecond})
	if !errors.Is(err, herdrbridge.ErrNotStarted) || !contains(err.Error(), "no claude session started") || !contains(err.Error(), "UP") {
		t.Fatalf("spawn of a command without hooks: %v, want ErrNotStarted after the wait, with the pane's UP", err)
	}
}

func TestASpawnThatWaitsReturnsOnceTheSessionStarted(t *testing.T) {
	f := newFleet(t)
	b := f.newBridge(func(c *herdrbridge.BridgeConfig) { c.Roles = startRoles(t) })
	// The agent's SessionStart hook, as soon as it is registered.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hooked := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if seq, err := f.log.LastSeq(ctx, "fleet.agent.w-1.registered"); err == nil && seq > 0 {
				_, err := f.log.Append(ctx, events.Event{Subject: "w-1", Data: events.AgentSession{SessionID: "s-1", State: "started", Source: "startup"}})
				hooked <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		hooked <- ctx.Err()
	}()
	defer func() {
		if err := <-hooked; err != nil {
			t.Errorf("the stand-in SessionStart hook: %v", err)
		}
	}()
	if _, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-silent", Name: "w-1", Wait: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range f.history("w-1") {
		if _, ok := ev.Data.(events.AgentExited); ok {
			t.Errorf("a started agent was recorded exited: %+v", ev)
		}
	}
}
