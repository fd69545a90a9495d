package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/orchestrator"
)

// ShimSpawner is the shim's POST /agents on this host's herdr bridge: the
// spawn `fleetd spawn` does (the subscription boundary checked, worktree,
// sandbox), returning once the agent's Claude session has started so the
// caller's first send finds it ready. Errors are translated to the
// shim's sentinels here, once.
type ShimSpawner struct {
	Sessions *SessionSpawner
}

var _ leadshim.Spawner = (*ShimSpawner)(nil)

// Spawn starts the agent and waits for its session to start.
func (s *ShimSpawner) Spawn(ctx context.Context, req leadshim.SpawnRequest) (events.AgentRegistered, error) {
	reg, err := s.Sessions.Bridge.Spawn(ctx, herdrbridge.SpawnRequest{Role: req.Role, Name: req.Name, Model: req.Model,
		Cwd: req.Cwd, Parent: req.Parent, Session: req.Session})
	if errors.Is(err, herdrbridge.ErrAgentExists) {
		err = fmt.Errorf("%w: %w", leadshim.ErrAgentExists, err)
	}
	if err != nil {
		return reg, err
	}
	if err := s.Sessions.waitStarted(ctx, req.Name); err != nil {
		return reg, fmt.Errorf("registered on host %s, pane %s, but: %w", reg.Host, reg.Pane, err)
	}
	return reg, nil
}

// ShimJobs is the shim's POST /jobs on an orchestrator.Runner.
type ShimJobs struct {
	Runner *orchestrator.Runner
}

var _ leadshim.Jobs = ShimJobs{}

// Start runs the job; plan and job errors become the shim's sentinels.
func (j ShimJobs) Start(ctx context.Context, req leadshim.JobStart) (string, error) {
	job, err := j.Runner.Start(ctx, orchestrator.RunRequest{Plan: req.Plan, Job: req.Job, From: req.From, ParentJob: req.ParentJob, MaySpawn: req.MaySpawn})
	switch {
	case errors.Is(err, orchestrator.ErrInvalidPlan):
		err = fmt.Errorf("%w: %w", leadshim.ErrBadPlan, err)
	case errors.Is(err, orchestrator.ErrJobUnknown):
		err = fmt.Errorf("%w: %w", leadshim.ErrUnknownJob, err)
	}
	return job, err
}

// Running is the runner's.
func (j ShimJobs) Running(job string) (<-chan struct{}, bool) { return j.Runner.Running(job) }

// Cancel is the runner's; its errors become the shim's sentinels.
func (j ShimJobs) Cancel(ctx context.Context, job, from string) (leadshim.JobCancelled, error) {
	c, err := j.Runner.Cancel(ctx, job, from)
	switch {
	case errors.Is(err, orchestrator.ErrJobUnknown):
		err = fmt.Errorf("%w: %w", leadshim.ErrUnknownJob, err)
	case errors.Is(err, orchestrator.ErrJobDone):
		err = fmt.Errorf("%w: %w", leadshim.ErrJobDone, err)
	}
	return leadshim.JobCancelled{Job: job, Stopped: c.Stopped, Turns: nonNil(c.Turns), Skipped: nonNil(c.Skipped), Typed: nonNil(c.Typed)}, err
}

// nonNil is s, or an empty slice for nil: a JSON list, never null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ShimAgents is the shim's POST /agents/{id}/stop and /restart, and GET
// /agents/{id}/screen, on this host's herdr bridge; a restart returns
// once the agent's new session started, as a spawn does. Errors become
// the shim's sentinels here.
type ShimAgents struct {
	Sessions *SessionSpawner
}

var _ leadshim.Agents = (*ShimAgents)(nil)

// Stop is the bridge's.
func (s *ShimAgents) Stop(ctx context.Context, agent, by string) error {
	return shimAgentsError(s.Sessions.Bridge.Stop(ctx, agent, by))
}

// Restart is the bridge's, then waits for the new session.
func (s *ShimAgents) Restart(ctx context.Context, agent, by string) (events.AgentRegistered, error) {
	reg, err := s.Sessions.Bridge.Restart(ctx, agent, by)
	if err != nil {
		return reg, shimAgentsError(err)
	}
	if err := s.Sessions.waitStarted(ctx, agent); err != nil {
		return reg, fmt.Errorf("restarted in pane %s, but: %w", reg.Pane, err)
	}
	return reg, nil
}

func shimAgentsError(err error) error {
	switch {
	case errors.Is(err, herdrbridge.ErrNotHere):
		return fmt.Errorf("%w: %w", leadshim.ErrNotHere, err)
	case errors.Is(err, herdrbridge.ErrNotSpawned):
		return fmt.Errorf("%w: %w", leadshim.ErrNotRestartable, err)
	case errors.Is(err, herdrbridge.ErrRestarting):
		return fmt.Errorf("%w: %w", leadshim.ErrRestarting, err)
	}
	return err
}

// Screen is the bridge's read of the agent's visible screen.
func (s *ShimAgents) Screen(ctx context.Context, agent string) (leadshim.Screen, error) {
	sc, err := s.Sessions.Bridge.Screen(ctx, agent)
	if err != nil {
		return leadshim.Screen{}, shimAgentsError(err)
	}
	return leadshim.Screen{Agent: sc.Agent, Pane: sc.Pane, Text: sc.Text, Revision: sc.Revision}, nil
}
