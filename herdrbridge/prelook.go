package herdrbridge

import (
	"context"
	"time"

	"github.com/fleetd/fleetd/lifecycle"
)

// preLook is a look at an idle agent's screen taken for a turn this
// gateway is about to queue for it (Expect), before the turn's queued
// event came back through the log.
type preLook struct {
	// wakes is the agent's wake count when the look began, with nothing
	// queued for it; at is when.
	wakes uint64
	at    time.Time
}

// preLookFresh bounds how old a look taken ahead (Expect) may be when the
// turn it was taken for is typed: its queued event is stored and folded
// in about a millisecond; a look older than this is taken again.
const preLookFresh = 50 * time.Millisecond

// Expect tells the bridge that this gateway is about to queue a turn for
// agent by name (the shim admitting a send). When the agent is this
// bridge's, with no turn in flight or queued, its worker takes the look
// at the screen that typing needs (ready) now, while the queued event is
// stored and comes back through the log, instead of after: on a 2-core
// VM that look is ~0.25 ms of a turn's ~1 ms overhead, and the append and
// the look overlap. The look counts for the turn only when nothing woke
// the agent between the look's start and the turn but the turn's own
// queued event — no other event of the agent, no herdr observation —
// and it is fresh (preLookFresh); otherwise typeTurn looks again as it
// always does. The typed event stays guarded by the agent's last
// sequence, so a write by anyone else still forces a fresh decision. It
// never blocks and is a no-op for an agent that is not this bridge's.
//
// The caller goes on at once: yielding to the worker here so that its look
// began before the append (runtime.Gosched) moved as much time from the
// dispatch to the admission as it saved (sync off, four alternated runs:
// dispatch 0.39 → 0.31 ms, admit 0.31 → 0.38 ms).
func (b *Bridge) Expect(agent string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	if !b.caughtUp || !b.ownedLocked(a) || !a.worker || len(b.book.Queue(agent)) > 0 {
		return
	}
	if _, busy := b.book.InFlight(agent); busy {
		return
	}
	a.expecting = true
	b.wakeLocked(a)
}

// preLookFor takes the look Expect asked for, when the agent still has
// nothing queued: the same ready an arriving turn would run, its outcome
// kept for typeTurn (lookedFor). A look that says not ready leaves no
// backoff behind: the turn, when it comes, is looked at again at once, as
// it was before looks were taken ahead. It reports whether it looked.
func (b *Bridge) preLookFor(ctx context.Context, agent string) bool {
	b.mu.Lock()
	a := b.agents[agent]
	if a == nil || !a.expecting {
		b.mu.Unlock()
		return false
	}
	a.expecting, a.look = false, preLook{}
	if len(b.book.Queue(agent)) > 0 {
		b.mu.Unlock()
		return false
	}
	look := preLook{wakes: a.wakes, at: b.cfg.Now()}
	b.mu.Unlock()
	tg, ok := b.snapshot(agent)
	if !ok {
		return false
	}
	ready := b.ready(ctx, agent, &tg)
	b.mu.Lock()
	defer b.mu.Unlock()
	if ready {
		a.look = look
	} else {
		a.resetBackoff()
	}
	return true
}

// lookedFor reports whether a look taken ahead (preLookFor) stands for
// turn t, the agent's next: the turn's queued event is the one thing that
// woke the agent since the look began (nothing was queued then, and every
// event folded and every herdr observation wakes it), and the look is
// fresh. Either way the look is used up.
func (b *Bridge) lookedFor(agent string, t lifecycle.Turn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	if a == nil {
		return false
	}
	l := a.look
	a.look, a.expecting = preLook{}, false
	return !l.at.IsZero() && a.wakes == l.wakes+1 && t.ID != "" && b.cfg.Now().Sub(l.at) <= preLookFresh
}
