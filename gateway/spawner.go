package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
)

// AgentLookup is the roster read a herdrSpawner finds panes through.
type AgentLookup interface {
	Agent(id string) (projections.Agent, bool)
}

// SessionSpawner adapts herdrbridge's spawn to orchestrator.Spawner: it
// starts session panes in this host's herdr — resuming the recorded
// Claude session when asked — and closes this host's agents' panes by
// pane id. `fleetd orchestrate --spawn` and the gateway's session reaper
// share it.
type SessionSpawner struct {
	Bridge *herdrbridge.Bridge
	Herdr  *herdrapi.Client
	Agents AgentLookup
	// Host is this host's token: panes of agents elsewhere are not ours
	// to close.
	Host string
	// StartTimeout bounds the wait for a spawned agent's session to start
	// (default 2m).
	StartTimeout time.Duration
}

var _ orchestrator.Spawner = (*SessionSpawner)(nil)

// errForeignPane: the agent's pane is on another host's herdr.
var errForeignPane = errors.New("agent's pane is on another host")

// Spawn starts the session's agent and returns once the agent is
// registered and its Claude Code session has started (its SessionStart
// hook reported a session id). Until then the pane may look idle to herdr
// — an empty screen — while the agent cannot take a paste yet: a turn
// typed then loses its line breaks or its Enter.
func (s *SessionSpawner) Spawn(ctx context.Context, spec orchestrator.SpawnSpec) error {
	_, err := s.Bridge.Spawn(ctx, herdrbridge.SpawnRequest{Role: spec.Role, Name: spec.Agent, Model: spec.Model, Cwd: spec.Cwd,
		Parent: spec.Parent, Tier: spec.Tier, Session: spec.Session, Resume: spec.Resume})
	if err != nil {
		return err
	}
	return s.waitStarted(ctx, spec.Agent)
}

// errNotStarted: a spawned agent's session did not start in time.
var errNotStarted = errors.New("agent's session did not start")

// waitStarted polls the roster until the agent reports a session id.
func (s *SessionSpawner) waitStarted(ctx context.Context, agent string) error {
	timeout := s.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		a, ok := s.Agents.Agent(agent)
		switch {
		case ok && a.Exited:
			return fmt.Errorf("spawn %s: %w: its pane exited", agent, errNotStarted)
		case ok && a.SessionID != "":
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("spawn %s: %w within %s", agent, errNotStarted, timeout)
		case <-tick.C:
		}
	}
}

// Close closes the agent's pane; the running bridge records the exit. A
// pane already gone is not an error: the exit is on its way.
func (s *SessionSpawner) Close(ctx context.Context, agent string) error {
	a, ok := s.Agents.Agent(agent)
	switch {
	case !ok || a.Pane == "":
		return fmt.Errorf("close %s: no pane known", agent)
	case s.Host != "" && a.Host != s.Host:
		return fmt.Errorf("close %s: %w (%s, this is %s)", agent, errForeignPane, a.Host, s.Host)
	}
	if err := s.Herdr.ClosePane(ctx, a.Pane); err != nil && !errors.Is(err, herdrapi.ErrPaneNotFound) {
		return fmt.Errorf("close %s (pane %s): %w", agent, a.Pane, err)
	}
	return nil
}
