package herdrbridge

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/events"
)

// AttentionRestartLimit is the attention reason of an agent its gateway
// stopped restarting: it died more often than its role allows
// (roles.Role.RestartMax within RestartWindow).
const AttentionRestartLimit = "restart_limit"

// restartsLocked reports whether the agent, dead now, is to be restarted:
// fleetd spawned it (an adopted pane is a person's), its role's policy
// restarts this kind of end (clean: an /exit or a logout), and the
// gateway has not given up on it.
func (b *Bridge) restartsLocked(a *agentState, clean bool) bool {
	if a.restartBy != "" {
		// A person's restart (Restart) closed the pane and starts it
		// again itself: its turns wait for that, whatever the policy.
		return true
	}
	if a.origin != "spawned" || a.gaveUp || a.stopBy != "" {
		return false
	}
	role, err := b.cfg.Roles.Get(a.role)
	return err == nil && role.Restarts(clean)
}

// startRestartLocked runs restart for the agent unless one runs already.
func (b *Bridge) startRestartLocked(a *agentState, cause string, paneGone bool) {
	if a.restarting || b.runCtx == nil || b.runCtx.Err() != nil {
		return
	}
	a.restarting = true
	ctx, id := b.runCtx, a.id
	b.wg.Go(func() { b.restart(ctx, id, cause, paneGone) })
}

// restart brings a dead agent back under its role's restart policy: it
// records the decision (AgentRestart restarting, with the backoff it
// waits), spawns the agent again in a new pane under the same id —
// resuming its Claude Code session when it had one and its role's command
// can — and records it restarted; the old pane, when it is still there
// (only the process died), is closed after the new registration, so its
// close is not taken for the new pane's. A failed attempt counts and is
// retried after the next backoff. Once the role's limit of restarts within
// its window is reached it gives up: the agent needs attention
// (AttentionRestartLimit) and, when its pane is gone, is retired as an
// exited agent is.
//
// Turns sent to the agent by name stay queued through all of it and are
// typed once the new session started; its role turns were released when
// it died, and a turn in flight failed agent_died.
func (b *Bridge) restart(ctx context.Context, agent, cause string, paneGone bool) {
	defer func() {
		b.mu.Lock()
		if a := b.agents[agent]; a != nil {
			a.restarting = false
			b.wakeLocked(a)
		}
		b.mu.Unlock()
	}()
	retired := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		a := b.agents[agent]
		return a.exited
	}
	for ctx.Err() == nil {
		if retired() {
			// Someone retired it meanwhile (a spawn that waited for it
			// gave up on it): not ours to bring back.
			b.log.Info("restart abandoned: the agent was retired", "agent", agent)
			return
		}
		b.mu.Lock()
		a := b.agents[agent]
		reg, _ := a.registration.Data.(events.AgentRegistered)
		oldPane, session := a.pane, a.sessionID
		role, rerr := b.cfg.Roles.Get(a.role)
		recent := 0
		if rerr == nil {
			since := b.cfg.Now().Add(-time.Duration(role.RestartWindow))
			for _, at := range a.restarts {
				if at.After(since) {
					recent++
				}
			}
		}
		b.mu.Unlock()
		if rerr != nil {
			b.giveUp(ctx, agent, oldPane, cause, recent, rerr.Error(), paneGone)
			return
		}
		if recent >= role.RestartMax {
			b.giveUp(ctx, agent, oldPane, cause, recent,
				fmt.Sprintf("%d restarts within %s (the role's restart_max and restart_window)", recent, time.Duration(role.RestartWindow)), paneGone)
			return
		}
		delay := role.RestartDelay(recent)
		attempt := recent + 1
		ack, err := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartRestarting, Attempt: attempt, Cause: cause, Delay: delay})
		if err != nil {
			b.warnWrite("record restarting", err, "agent", agent)
			if !sleep(ctx, b.cfg.Poll) {
				return
			}
			continue
		}
		b.waitApplied(ctx, agent, ack.Seq)
		b.log.Info("restarting agent", "agent", agent, "attempt", attempt, "cause", cause, "delay", delay)
		if !sleep(ctx, delay) || retired() {
			return
		}
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
			b.log.Warn("restart failed", "agent", agent, "attempt", attempt, "err", err)
			if _, aerr := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartFailed, Attempt: attempt, Cause: cause, Message: err.Error()}); aerr != nil {
				b.warnWrite("record failed restart", aerr, "agent", agent)
			}
			continue
		}
		// The fold must hold the new registration before the restart
		// ends: until then the agent still looks dead, and a delivery step
		// would restart it again.
		b.waitFor(ctx, agent, 10*time.Second, func() bool { a := b.agents[agent]; return a != nil && a.pane == got.Pane })
		if _, err := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartRestarted, Attempt: attempt, Cause: cause,
			Pane: got.Pane, Resume: req.Resume}); err != nil {
			b.warnWrite("record restarted", err, "agent", agent)
		}
		if !paneGone && oldPane != "" && oldPane != got.Pane {
			if err := b.client.ClosePane(ctx, oldPane); err != nil {
				b.log.Warn("close the dead agent's old pane", "agent", agent, "pane", oldPane, "err", err)
			}
		}
		b.log.Info("restarted agent", "agent", agent, "attempt", attempt, "pane", got.Pane, "resume", req.Resume)
		return
	}
}

// giveUp stops restarting the agent: the decision is recorded, the agent
// needs attention, and an agent whose pane is gone is retired — its
// queued turns fail pane_exited and it is recorded exited.
func (b *Bridge) giveUp(ctx context.Context, agent, pane, cause string, recent int, why string, paneGone bool) {
	b.log.Warn("agent not restarted again", "agent", agent, "cause", cause, "why", why)
	// Given up from now on, before the restart ends: the next delivery
	// step must not decide to restart it again before the fold has the
	// gave_up event.
	b.mu.Lock()
	b.agents[agent].gaveUp = true
	b.mu.Unlock()
	if _, err := b.append(ctx, agent, "", events.AgentRestart{State: events.RestartGaveUp, Attempt: recent, Cause: cause, Message: why}); err != nil {
		b.warnWrite("record restart limit", err, "agent", agent)
	}
	b.attend(ctx, agent, AttentionRestartLimit, "not restarted again: "+why+"; last cause: "+cause)
	if paneGone {
		b.retire(ctx, agent, pane, cause)
	}
}

// retire records an agent whose pane is gone as exited, after failing the
// turns still queued for it.
func (b *Bridge) retire(ctx context.Context, agent, pane, reason string) {
	b.mu.Lock()
	a := b.agents[agent]
	queued := b.book.Queue(agent)
	reg, _ := a.registration.Data.(events.AgentRegistered)
	b.mu.Unlock()
	for _, id := range queued {
		if _, err := b.append(ctx, agent, id, events.AgentFailed{Reason: events.ReasonPaneExited, Message: "pane " + pane + ": " + reason}); err != nil {
			b.warnWrite("record failed turn", err, "agent", agent, "turn", id)
		}
	}
	wt := b.reapWorktree(ctx, agent, reg.Worktree)
	if _, err := b.append(ctx, agent, "", events.AgentExited{Pane: pane, Reason: reason, Worktree: wt}); err != nil {
		b.warnWrite("record exit", err, "agent", agent)
	}
}
