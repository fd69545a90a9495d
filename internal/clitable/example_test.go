package clitable_test

import (
	"os"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/clitable"
	"github.com/fleetd/fleetd/projections"
)

func ExampleTable_Write() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	agents := []projections.Agent{
		{Agent: "w-1", Host: "h1", Role: "w", Kind: "claude", Status: "working", CurrentTurn: "01T", QueueDepth: 1, LastSeen: now.Add(-3 * time.Second),
			Worktree: events.Worktree{Branch: "fleet/w-1", Ahead: 2}},
		{Agent: "w-2", Host: "h1", Status: "idle", Stale: true, LastSeen: now.Add(-90 * time.Second)},
	}
	_ = clitable.Roster.Write(os.Stdout, agents, now)
	_ = clitable.Roster.Write(os.Stdout, nil, now)
	// Output:
	// AGENT  HOST  ROLE  KIND    STATUS                            TURN  QUEUE  MODEL  TOKENS  BRANCH               LAST SEEN
	// w-1    h1    w     claude  working                           01T   1      -      0/0     fleet/w-1 (2 ahead)  3s ago
	// w-2    h1    -     -       idle (stale: its host is silent)  -     0      -      0/0     -                    1m ago
	// AGENT  HOST  ROLE  KIND  STATUS  TURN  QUEUE  MODEL  TOKENS  BRANCH  LAST SEEN
	// (no agents: spawn one with 'fleetd spawn' or adopt a pane with 'fleetd adopt')
}
