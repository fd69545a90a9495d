package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/turns"
)

// reclaim gives back to their roles the turns assigned to agents that can
// no longer type them — agents on a stale host, agents that exited — and
// re-announces released turns whose RoleQueued never made it to the log,
// once per Poll until ctx ends: a host goes stale by the clock, not by an
// event, and a round looks at every turn the views hold, too much to do
// on every event. Every router of the fleet runs it; the guarded append
// makes one of them win each release.
func (r *Router) reclaim(ctx context.Context) {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.reclaimOnce(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Debug("router: reclaim round", "err", err)
		}
	}
}

// lost reports why an agent can no longer type a turn assigned to it, or
// "" when it can (or may yet: an agent whose process died is its own
// gateway's to release, which knows whether it comes back).
func lost(a projections.Agent, known bool) (reason, msg string) {
	switch {
	case !known:
		return "", ""
	case a.Exited:
		return events.ReasonPaneExited, "agent " + a.Agent + " exited before the turn was typed"
	case a.Stale:
		return events.ReasonHostStale, "host " + a.Host + " of agent " + a.Agent + " went silent before the turn was typed"
	}
	return "", ""
}

// reclaimOnce takes one look at the open role turns.
func (r *Router) reclaimOnce(ctx context.Context) error {
	// The match runs after the views' lock is let go (projections.Views.Turns): it may read them.
	candidates := r.cfg.Views.Turns(func(t lifecycle.Turn) bool {
		return t.Releasable() || t.State == lifecycle.StateQueued && t.Role != "" && t.Agent == "" && t.Releases > t.Requeued
	})
	var errs []error
	for _, t := range candidates {
		var err error
		switch {
		case t.Agent == "":
			err = r.requeue(ctx, t)
		default:
			if reason, _ := lost(r.cfg.Views.Agent(t.Agent)); reason != "" {
				err = r.release(ctx, t)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// release sends turn t, assigned to an agent that can no longer type it,
// back to its role's queue: the release is appended guarded by the
// agent's last sequence as the views saw it, so it is stored only when
// nothing happened to the agent since — in particular no AgentTyped from
// its gateway coming back at that moment. A conflict leaves the turn for
// the next round, decided afresh.
func (r *Router) release(ctx context.Context, t lifecycle.Turn) error {
	seen, err := r.catchUp(ctx, 0)
	if err != nil {
		return err
	}
	t, known, err := r.cfg.Views.Turn(ctx, t.ID)
	if err != nil || !known || !t.Releasable() {
		return err
	}
	reason, msg := lost(r.cfg.Views.Agent(t.Agent))
	if reason == "" {
		return nil
	}
	filter, err := events.AgentAll(t.Agent)
	if err != nil {
		return err
	}
	last, err := r.cfg.Log.LastSeq(ctx, filter)
	if err != nil {
		return fmt.Errorf("agent %s position: %w", t.Agent, err)
	}
	if last > seen {
		return nil // the agent moved since the views were read: next round
	}
	ev, err := turns.Release(t, reason, msg)
	if err != nil {
		return err
	}
	ev.Source, ev.Time = r.source, r.cfg.Now()
	ack, err := r.cfg.Log.Append(ctx, ev, events.ExpectLastSeqFor(last, filter))
	if errors.Is(err, events.ErrConcurrency) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release turn %s from %s: %w", t.ID, t.Agent, err)
	}
	r.cfg.Logger.Info("router: released a turn back to its role", "turn", t.ID, "agent", t.Agent, "role", t.Role, "reason", reason, "attempt", ev.Data.(events.AgentReleased).Attempt)
	if err := r.cfg.Views.WaitSeq(ctx, ack.Seq); err != nil {
		return err
	}
	t, known, err = r.cfg.Views.Turn(ctx, t.ID)
	if err != nil || !known || t.Agent != "" || t.Releases <= t.Requeued {
		return err
	}
	return r.requeue(ctx, t)
}

// requeue appends the RoleQueued that hands a released turn to its role's
// router again. Its id is derived from the turn and the release, so
// appending it twice stores it once; a copy after the dedupe window finds
// the turn assigned and is acked away.
func (r *Router) requeue(ctx context.Context, t lifecycle.Turn) error {
	ev, err := turns.Requeue(t)
	if err != nil {
		return err
	}
	ev.Source, ev.Time = r.source, r.cfg.Now()
	if _, err := r.cfg.Log.Append(ctx, ev); err != nil {
		return fmt.Errorf("requeue turn %s on role %s: %w", t.ID, t.Role, err)
	}
	return nil
}
