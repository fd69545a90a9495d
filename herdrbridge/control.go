package herdrbridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/roles"
)

// ErrNotHere means a stop or restart named an agent this gateway does not
// own: not in the roster, exited, or in another host's herdr (only the
// owning gateway touches a pane).
var ErrNotHere = errors.New("agent is not a live agent of this host")

// ErrNotSpawned means a restart named an agent fleetd did not start (an
// adopted pane): fleetd does not know how to start its command again.
var ErrNotSpawned = errors.New("agent was not spawned by fleetd")

// ErrRestarting means a stop or restart named an agent whose restart runs.
var ErrRestarting = errors.New("agent is being restarted")

// stopWait bounds how long Stop and Restart wait for the log to hold
// what they did (the exit, the new registration).
const stopWait = 30 * time.Second

// ownedFor is the agent by id when it is a live agent of this host that
// no restart is bringing back, else why not.
func (b *Bridge) ownedFor(agent string) (*agentState, error) {
	a := b.agents[agent]
	switch {
	case a == nil || !a.registered || a.exited || a.exitSent:
		return nil, fmt.Errorf("%w: %s is not live", ErrNotHere, agent)
	case a.host != b.cfg.Host:
		return nil, fmt.Errorf("%w: %s runs on host %s, not %s", ErrNotHere, agent, a.host, b.cfg.Host)
	case a.pane == "":
		return nil, fmt.Errorf("%w: %s has no pane", ErrNotHere, agent)
	case a.restarting:
		return nil, fmt.Errorf("%w: %s", ErrRestarting, agent)
	}
	return a, nil
}

// Stop ends one of this host's agents for good, on behalf of by: its
// pane is closed and it is retired as an agent whose pane went is — its
// role turns go back to their role, the turns sent to it by name fail
// (pane_exited), a turn in flight fails agent_died — except that its
// role's restart policy does not bring it back and its AgentExited says
// "stopped by <by>". It returns once the log holds the exit.
func (b *Bridge) Stop(ctx context.Context, agent, by string) error {
	b.catchUp(ctx, agent) // decide on the agent as the log has it now
	b.mu.Lock()
	a, err := b.ownedFor(agent)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	a.stopBy = by
	pane := a.pane
	b.mu.Unlock()
	if err := b.client.ClosePane(ctx, pane); err != nil && !errors.Is(err, herdrapi.ErrPaneNotFound) {
		b.mu.Lock()
		a.stopBy = ""
		b.mu.Unlock()
		return fmt.Errorf("stop %s: close pane %s: %w", agent, pane, err)
	}
	b.log.Info("agent stopped", "agent", agent, "pane", pane, "by", by)
	// Retired here rather than on herdr's word of the close, which may
	// come late (or, after a lost connection, as a sync's "not found"):
	// whichever comes first records it, once.
	b.exitAgent(ctx, agent, pane, "stopped by "+by)
	if !b.waitFor(ctx, agent, stopWait, func() bool { return b.agents[agent].exited }) {
		return fmt.Errorf("stop %s: the pane is closed, but its exit is not in the log after %s", agent, stopWait)
	}
	return nil
}

// Restart starts one of this host's agents afresh, on behalf of by: the
// decision is recorded (AgentRestart restarting, its cause "restarted by
// <by>"), the agent's pane is closed — a turn in flight fails
// agent_died, its role turns go back to their role, the turns sent to it
// by name wait — and it is spawned again under the same id as its role's
// restart policy would (resuming its session when its command can), then
// recorded restarted. A start that fails is recorded failed and the agent
// retired (its queued turns fail pane_exited). It returns the new
// registration once the log holds it; the caller waits for its session.
func (b *Bridge) Restart(ctx context.Context, agent, by string) (events.AgentRegistered, error) {
	// The session to resume is the one the log holds now, not the one
	// the fold last got to.
	b.catchUp(ctx, agent)
	b.mu.Lock()
	a, err := b.ownedFor(agent)
	if err == nil && a.origin != "spawned" {
		err = fmt.Errorf("%w: %s is a pane fleetd adopted (origin %q); start it again by hand", ErrNotSpawned, agent, a.origin)
	}
	var role roles.Role
	if err == nil {
		role, err = b.cfg.Roles.Get(a.role)
	}
	if err != nil {
		b.mu.Unlock()
		return events.AgentRegistered{}, err
	}
	a.restarting, a.restartBy = true, by
	reg, _ := a.registration.Data.(events.AgentRegistered)
	oldPane, session := a.pane, a.sessionID
	since := b.cfg.Now().Add(-time.Duration(role.RestartWindow))
	attempt := 1
	for _, at := range a.restarts {
		if at.After(since) {
			attempt++
		}
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if a := b.agents[agent]; a != nil {
			a.restarting, a.restartBy = false, ""
			b.wakeLocked(a)
		}
		b.mu.Unlock()
	}()
	cause := "restarted by " + by
	ack, err := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartRestarting, Attempt: attempt, Cause: cause})
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("restart %s: record it: %w", agent, err)
	}
	b.waitApplied(ctx, agent, ack.Seq)
	// The old process ends before the new one starts: two would share the
	// session (and the worktree).
	if err := b.client.ClosePane(ctx, oldPane); err != nil && !errors.Is(err, herdrapi.ErrPaneNotFound) {
		b.warnRestartFailed(ctx, agent, attempt, cause, err)
		return events.AgentRegistered{}, fmt.Errorf("restart %s: close pane %s: %w", agent, oldPane, err)
	}
	// The pane's end, as exitAgent records any: the turn in flight fails
	// and role turns go back; restartBy keeps the rest queued.
	b.exitAgent(ctx, agent, oldPane, cause)
	req := SpawnRequest{Role: reg.Role, Name: agent, Model: reg.Model, Parent: reg.Parent, Tier: reg.Tier,
		Session: reg.Session, restart: true}
	if role.Worktree == nil {
		req.Cwd = reg.Cwd
	}
	if _, ok := role.ResumeArgv("", session); ok && session != "" {
		req.Resume = session
	}
	got, err := b.Spawn(ctx, req)
	if err != nil {
		b.warnRestartFailed(ctx, agent, attempt, cause, err)
		b.retire(ctx, agent, oldPane, cause+", and it did not start again: "+err.Error())
		return events.AgentRegistered{}, fmt.Errorf("restart %s: %w", agent, err)
	}
	if !b.waitFor(ctx, agent, stopWait, func() bool { a := b.agents[agent]; return a != nil && a.pane == got.Pane }) {
		return got, fmt.Errorf("restart %s: spawned in pane %s, but its registration is not in the log after %s", agent, got.Pane, stopWait)
	}
	if _, err := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartRestarted, Attempt: attempt, Cause: cause,
		Pane: got.Pane, Resume: req.Resume}); err != nil {
		b.warnWrite("record restarted", err, "agent", agent)
	}
	b.log.Info("agent restarted", "agent", agent, "pane", got.Pane, "by", by, "resume", req.Resume)
	return got, nil
}

// warnRestartFailed records a person's restart that could not go on.
func (b *Bridge) warnRestartFailed(ctx context.Context, agent string, attempt int, cause string, err error) {
	b.log.Warn("restart failed", "agent", agent, "cause", cause, "err", err)
	if _, aerr := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartFailed, Attempt: attempt, Cause: cause, Message: err.Error()}); aerr != nil {
		b.warnWrite("record failed restart", aerr, "agent", agent)
	}
}
