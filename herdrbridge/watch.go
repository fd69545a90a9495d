package herdrbridge

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

// lifecycleKinds are the herdr events the bridge follows for every pane.
var lifecycleKinds = []herdrapi.EventKind{herdrapi.EventPaneCreated, herdrapi.EventPaneClosed, herdrapi.EventPaneExited, herdrapi.EventPaneAgentDetected, herdrapi.EventPaneUpdated}

// watchHerdr keeps a session with herdr open: it reconnects with backoff
// after herdr went away, and records each connect and loss once.
func (b *Bridge) watchHerdr(ctx context.Context) {
	backoff := b.cfg.ReconnectBackoff
	for ctx.Err() == nil {
		began := time.Now()
		err := b.session(ctx)
		if ctx.Err() != nil {
			return
		}
		b.lost(ctx, err)
		if time.Since(began) > 4*b.cfg.MaxReconnectBackoff {
			backoff = b.cfg.ReconnectBackoff
		}
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, b.cfg.MaxReconnectBackoff)
	}
}

// lost marks herdr unreachable: statuses are stale until re-synced, so
// nothing is typed meanwhile, and the loss is recorded once.
func (b *Bridge) lost(ctx context.Context, cause error) {
	b.mu.Lock()
	was := b.herdr
	b.herdr = linkDown
	for _, a := range b.agents {
		a.fresh = false
	}
	b.notifyLocked()
	b.mu.Unlock()
	if was == linkDown {
		return
	}
	b.log.Warn("herdr unreachable", "socket", b.client.Path(), "err", cause)
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	if _, err := b.append(ctx, b.cfg.Host, "", events.HostHerdr{Connected: false, Socket: b.client.Path(), Error: msg}); err != nil {
		b.warnWrite("record herdr loss", err)
	}
}

// paneStatus is one per-pane status event, tagged with its pane.
type paneStatus struct {
	pane string
	ev   herdrapi.Event
}

// session is one connection's life: snapshot, subscribe to lifecycle
// events, subscribe to the status of each owned pane, re-sync, then follow
// events until herdr goes away (the error says how) or ctx ends.
func (b *Bridge) session(ctx context.Context) error {
	pong, err := b.client.Check(ctx)
	if err != nil {
		return err
	}
	snap, err := b.client.Snapshot(ctx)
	if err != nil {
		return err
	}
	lc, err := b.client.Subscribe(ctx, herdrapi.Lifecycle(lifecycleKinds...))
	if err != nil {
		return err
	}
	defer lc.Close()

	sctx, cancel := context.WithCancel(ctx)
	var fwd sync.WaitGroup
	// boundary holds the agents whose panes' processes are to be checked
	// against the subscription boundary: after a burst of herdr events
	// (agents starting), one read of /proc checks them all.
	boundary := map[string]bool{}
	subs := map[string]*herdrapi.Stream{}
	statuses := make(chan paneStatus, 64)
	defer func() {
		cancel()
		for _, s := range subs {
			s.Close()
		}
		fwd.Wait()
	}()

	// Panes in the snapshot are known: replayed pane.created events for
	// them are old news.
	known := map[string]bool{}
	for _, p := range snap.Panes {
		known[p.PaneID] = true
	}
	b.mu.Lock()
	for _, a := range b.agents {
		a.workingSeq = 0 // a new herdr may count state changes afresh
	}
	b.mu.Unlock()
	// Owned panes missing from the snapshot died while we were away. An
	// agent registered after the snapshot was taken is missing from it
	// too, so ask herdr about the pane itself before declaring it gone.
	for _, a := range b.ownedAgents() {
		if known[a.pane] {
			continue
		}
		if _, err := b.client.Pane(ctx, a.pane); errors.Is(err, herdrapi.ErrPaneNotFound) {
			b.exitAgent(ctx, a.id, a.pane, "pane gone while herdr was unreachable")
		}
	}
	if err := b.reconcile(sctx, subs, statuses, &fwd, boundary); err != nil {
		return err
	}
	b.checkBoundaries(ctx, boundary)
	lastCheck := time.Now()
	var checkDue <-chan time.Time // set while a check waits out boundaryEvery
	b.mu.Lock()
	b.herdr = linkUp
	b.notifyLocked()
	b.mu.Unlock()
	b.log.Info("herdr connected", "socket", b.client.Path(), "version", pong.Version)
	if _, err := b.append(ctx, b.cfg.Host, "", events.HostHerdr{Connected: true, Socket: b.client.Path(), Version: pong.Version, Protocol: pong.Protocol}); err != nil {
		b.warnWrite("record herdr connect", err)
	}

	for {
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		select {
		case ev, ok := <-lc.Events():
			if !ok {
				if err := lc.Err(); err != nil {
					return err
				}
				return herdrapi.ErrDisconnected
			}
			if err := b.onLifecycle(ctx, ev, known, boundary); err != nil {
				return err
			}
		case ps := <-statuses:
			if err := b.onStatus(ctx, ps.pane, ps.ev); err != nil {
				return err
			}
		case <-ch:
		case <-checkDue:
			checkDue = nil
		case <-ctx.Done():
			return nil
		}
		if err := b.reconcile(sctx, subs, statuses, &fwd, boundary); err != nil {
			return err
		}
		if len(boundary) > 0 && len(lc.Events()) == 0 && checkDue == nil {
			// No more of the burst is waiting to be handled; but herdr
			// hands out a lifecycle subscription's events a few a second,
			// so a hundred agents starting come as a hundred bursts of
			// one: a check waits out boundaryEvery after the last.
			if wait := boundaryEvery - time.Since(lastCheck); wait > 0 {
				checkDue = time.After(wait)
			} else {
				b.checkBoundaries(ctx, boundary)
				lastCheck = time.Now()
			}
		}
	}
}

// boundaryEvery is the least time between two boundary checks of a host's
// panes. A check reads the environment of every process on the machine
// (hundreds: milliseconds of CPU); with one per herdr event, a hundred
// agents starting cost a scan each, for the ten seconds and more herdr
// takes to report them, beside the agents' own start. A check reports a
// crossing; it does not hold a turn back (a spawn refuses one before
// herdr is asked), so a second's wait costs nothing.
const boundaryEvery = time.Second

// ownedAgents copies the agents this bridge delivers to.
func (b *Bridge) ownedAgents() []agentState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []agentState
	for _, a := range b.agents {
		if b.ownedLocked(a) {
			out = append(out, *a)
		}
	}
	return out
}

// reconcile keeps one status subscription per owned pane, and no other:
// each costs herdr CPU. A new subscription is followed by a sync through
// agent.get (covering whatever changed before it started), and its agent
// joins boundary, for a check of the pane's processes.
func (b *Bridge) reconcile(ctx context.Context, subs map[string]*herdrapi.Stream, out chan<- paneStatus, fwd *sync.WaitGroup, boundary map[string]bool) error {
	want := map[string]string{}
	for _, a := range b.ownedAgents() {
		want[a.pane] = a.id
	}
	for pane, s := range subs {
		if _, ok := want[pane]; !ok {
			s.Close()
			delete(subs, pane)
		}
	}
	for pane, agent := range want {
		if subs[pane] != nil {
			continue
		}
		s, err := b.client.Subscribe(ctx, []herdrapi.Subscription{{Type: herdrapi.EventPaneAgentStatusChanged, PaneID: pane}})
		if errors.Is(err, herdrapi.ErrPaneNotFound) {
			b.exitAgent(ctx, agent, pane, "pane not found")
			continue
		}
		if err != nil {
			return err
		}
		subs[pane] = s
		fwd.Go(func() {
			for ev := range s.Events() {
				select {
				case out <- paneStatus{pane, ev}:
				case <-ctx.Done():
					return
				}
			}
		})
		if err := b.syncPane(ctx, pane, ""); err != nil {
			return err
		}
		boundary[agent] = true
	}
	return nil
}

// onLifecycle handles one lifecycle event. Replays (herdr re-sends up to
// 512 old ones to every new subscriber) are harmless: a created pane the
// snapshot had is skipped, and an exit is only believed when herdr no
// longer has the pane. A pane whose agent herdr detected anew joins
// boundary, for a check of its processes.
func (b *Bridge) onLifecycle(ctx context.Context, ev herdrapi.Event, known, boundary map[string]bool) error {
	agent := b.ownerOf(ev.PaneID)
	switch ev.Kind {
	case herdrapi.EventPaneCreated:
		known[ev.PaneID] = true
	case herdrapi.EventPaneClosed, herdrapi.EventPaneExited:
		if agent == "" {
			return nil
		}
		_, err := b.client.Pane(ctx, ev.PaneID)
		switch {
		case errors.Is(err, herdrapi.ErrPaneNotFound):
			b.exitAgent(ctx, agent, ev.PaneID, string(ev.Kind))
		case err != nil:
			return err
		}
	case herdrapi.EventPaneAgentDetected, herdrapi.EventPaneUpdated:
		if agent == "" {
			return nil
		}
		if err := b.syncPane(ctx, ev.PaneID, ""); err != nil {
			return err
		}
		if ev.Kind == herdrapi.EventPaneAgentDetected {
			if ev.Agent == "" {
				b.checkDied(ctx, agent)
			}
			if ev.Agent != "" {
				// herdr sees the agent as the pane's foreground process
				// again (a child command it ran has ended): agent.prompt
				// will be accepted.
				b.mu.Lock()
				if a := b.agents[agent]; a != nil {
					a.promptRefused = false
				}
				b.mu.Unlock()
			}
			boundary[agent] = true
		}
	}
	return nil
}

// onStatus handles a pane.agent_status_changed event. The event says
// what fleetd needs (the status, and the agent it is about): asking herdr
// with agent.get on every event would cost it a request per transition
// for nothing.
func (b *Bridge) onStatus(ctx context.Context, pane string, ev herdrapi.Event) error {
	b.mu.Lock()
	var label string
	owned := false
	for _, a := range b.agents {
		if a.pane == pane && b.ownedLocked(a) {
			owned, label = true, a.label
		}
	}
	b.mu.Unlock()
	if !owned {
		return nil
	}
	if ev.Agent != "" {
		label = ev.Agent
	}
	return b.observe(ctx, pane, ev.AgentStatus, 0, label)
}

// ownerOf names the owned agent in pane, or "".
func (b *Bridge) ownerOf(pane string) string {
	if pane == "" {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.agents {
		if a.pane == pane && b.ownedLocked(a) {
			return a.id
		}
	}
	return ""
}

// syncPane reads the pane's agent from herdr and records what it shows;
// transition, when set, is the status an event reported (it may already
// have moved on, and the transition is what the log must show). Only the
// herdr watcher calls it: it is the one writer of herdr status events, so
// none is written twice.
func (b *Bridge) syncPane(ctx context.Context, pane string, transition herdrapi.AgentStatus) error {
	st, seq, label, ok, err := b.readPane(ctx, pane)
	if err != nil || !ok {
		return err
	}
	if transition != "" && transition != st {
		st, seq = transition, 0
	}
	return b.observe(ctx, pane, st, seq, label)
}

// peek asks herdr about the pane right away, for a delivery decision, and
// notes what it shows without writing a status event (that is the
// watcher's, which hears of the same change by its events).
func (b *Bridge) peek(ctx context.Context, pane string) error {
	st, seq, label, ok, err := b.readPane(ctx, pane)
	if err != nil || !ok {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.agents {
		if a.pane == pane && b.ownedLocked(a) {
			b.noteLocked(a, st, seq, label)
		}
	}
	return nil
}

// readPane is herdr's view of the pane's agent: agent.get, or pane.get
// for a pane herdr does not see as an agent. ok is false when the pane is
// gone (its agent is retired).
func (b *Bridge) readPane(ctx context.Context, pane string) (st herdrapi.AgentStatus, seq uint64, label string, ok bool, err error) {
	info, err := b.client.Agent(ctx, pane)
	switch {
	case err == nil:
		return info.AgentStatus, info.StateChangeSeq, info.Agent, true, nil
	case errors.Is(err, herdrapi.ErrAgentNotFound):
		p, perr := b.client.Pane(ctx, pane)
		if errors.Is(perr, herdrapi.ErrPaneNotFound) {
			if agent := b.ownerOf(pane); agent != "" {
				b.exitAgent(ctx, agent, pane, "pane not found")
			}
			return "", 0, "", false, nil
		}
		if perr != nil {
			return "", 0, "", false, perr
		}
		return p.AgentStatus, 0, p.Agent, true, nil
	}
	return "", 0, "", false, err
}

// observe updates the herdr view of the pane's agent and appends a status
// event when the status differs from the last one the log has from herdr:
// repeated same-status events and re-syncs after a reconnect add nothing.
func (b *Bridge) observe(ctx context.Context, pane string, st herdrapi.AgentStatus, seq uint64, label string) error {
	b.mu.Lock()
	var a *agentState
	for _, x := range b.agents {
		if x.pane == pane && b.ownedLocked(x) {
			a = x
		}
	}
	if a == nil {
		b.mu.Unlock()
		return nil
	}
	b.noteLocked(a, st, seq, label)
	id, prev := a.id, a.logStatus
	b.mu.Unlock()
	if events.Status(st) == prev || !events.Status(st).Valid() {
		return nil
	}
	ack, err := b.append(ctx, id, "", events.AgentStatusChanged{Status: events.Status(st), Source: "herdr", Pane: pane, StateChangeSeq: seq})
	if err != nil {
		b.warnWrite("record status", err, "agent", id)
		return nil
	}
	b.mu.Lock()
	if ack.Seq > a.logStatusSeq {
		a.logStatus, a.logStatusSeq = events.Status(st), ack.Seq
	}
	b.mu.Unlock()
	return nil
}

// noteLocked records a herdr observation of a's pane.
func (b *Bridge) noteLocked(a *agentState, st herdrapi.AgentStatus, seq uint64, label string) {
	a.fresh, a.status, a.label = true, st, label
	if seq > a.seq {
		a.seq = seq
	}
	if st == herdrapi.StatusWorking {
		a.workingSeq = max(a.workingSeq, seq, a.seq)
	}
	if st == herdrapi.StatusWorking || st == herdrapi.StatusBlocked {
		// The agent took something: it works, or asks permission for it.
		a.busySinceTyped = true
	}
	if label != "" {
		// Only an agent herdr recognises has a herdr status worth
		// anything; the hooks speak for the others.
		b.readyLocked(a, st.Ready())
	}
	switch {
	case st != herdrapi.StatusBlocked:
		a.blockedFrom = time.Time{}
	case a.blockedFrom.IsZero():
		a.blockedFrom = b.cfg.Now()
	}
	b.wakeLocked(a)
}

// exitAgent retires an agent whose pane is gone: its queued and in-flight
// turns fail with pane_exited, then AgentExited is appended, once.
func (b *Bridge) exitAgent(ctx context.Context, agent, pane, reason string) {
	b.mu.Lock()
	a := b.agents[agent]
	if a == nil || !b.ownedLocked(a) || a.pane != pane {
		b.mu.Unlock()
		return
	}
	a.exitSent = true
	if a.stopBy != "" {
		// Its pane went because a person stopped it (Stop): the record
		// says who, whatever herdr called the close.
		reason = "stopped by " + a.stopBy
	}
	var queued []string
	var released []lifecycle.Turn
	for _, id := range b.book.Queue(agent) {
		if t, ok := b.book.Turn(id); ok && t.Releasable() {
			released = append(released, t)
		} else {
			queued = append(queued, id)
		}
	}
	inFlight, typed := b.book.InFlight(agent)
	reg, _ := a.registration.Data.(events.AgentRegistered)
	lastSeq := a.lastSeq
	restart := b.restartsLocked(a, false)
	b.notifyLocked()
	b.mu.Unlock()
	// Role turns go to another agent of the role; the rest fail. A
	// release refused by a conflict is the routers' to retry: they
	// reclaim the role turns of agents that exited.
	b.release(ctx, agent, lastSeq, released, events.ReasonPaneExited, "pane "+pane+" exited ("+reason+") before the turn was typed")
	var errs []error
	if typed {
		// Typed, perhaps submitted, never finished: never typed again.
		_, err := b.append(ctx, agent, inFlight.ID, events.AgentFailed{Reason: events.ReasonAgentDied, Message: "pane " + pane + " exited while the turn was in flight: " + reason})
		errs = append(errs, err)
	}
	if restart && errors.Join(errs...) == nil {
		// Its role brings it back in a new pane: the turns sent to it by
		// name wait for that.
		b.mu.Lock()
		b.startRestartLocked(a, "pane "+pane+" exited: "+reason, true)
		b.mu.Unlock()
		return
	}
	for _, id := range queued {
		_, err := b.append(ctx, agent, id, events.AgentFailed{Reason: events.ReasonPaneExited, Message: "pane " + pane + ": " + reason})
		errs = append(errs, err)
	}
	wt := b.reapWorktree(ctx, agent, reg.Worktree)
	_, err := b.append(ctx, agent, "", events.AgentExited{Pane: pane, Reason: reason, Worktree: wt})
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		b.warnWrite("record exit", err, "agent", agent)
		b.mu.Lock()
		a.exitSent = false // retried at the next sync
		b.startWorkerLocked(a)
		b.notifyLocked()
		b.mu.Unlock()
		return
	}
	b.log.Info("agent exited", "agent", agent, "pane", pane, "reason", reason)
}

// SessionEndDied is the AgentSession.Reason of a session end fleetd
// records itself: the agent's process died (a crash, a kill) without its
// SessionEnd hook, and its pane's shell is in the foreground again.
const SessionEndDied = "died"

// unknownPaneRecheck spaces the looks at a pane whose processes this
// machine cannot see.
const unknownPaneRecheck = 15 * time.Second

// checkDied records the end of the agent's session when its process is
// gone: herdr no longer sees an agent in the pane, or a readiness check
// found the pane's shell in the foreground, while the hooks still think
// the session live. Only the shell in the foreground counts — herdr also
// loses sight of an agent that runs a child command — so a pane whose
// processes cannot be read here is left to its hooks.
func (b *Bridge) checkDied(ctx context.Context, agent string) {
	b.mu.Lock()
	a := b.agents[agent]
	// Alive as far as the log knows: a live session, or one never started.
	alive := func() bool { return a.sessionLive || !a.sessionSeen }
	mark := func() string { return a.registration.ID + "/" + a.sessionID }
	if a == nil || !b.ownedLocked(a) || !alive() || a.deathSent == mark() {
		b.mu.Unlock()
		return
	}
	pane, session, marked, started := a.pane, a.sessionID, mark(), a.sessionSeen
	b.mu.Unlock()
	shell, known := b.roots.showsShell(b.cfg.ProcRoot, b.client.Path(), pane)
	b.mu.Lock()
	if !known && started {
		// The pane's processes are not visible here: finding that out is
		// a pass over every process's environment, so a live agent's pane
		// is looked at far less often (a starting one's may only not be
		// there yet).
		a.deathCheck = b.cfg.Now().Add(unknownPaneRecheck)
	}
	// A session never started: the shell in the foreground may only not
	// have run the typed command yet.
	exited := started || a.launch.exited(shell, known, b.cfg.Now())
	if !known || !shell || !exited || !alive() || mark() != marked {
		b.mu.Unlock()
		return
	}
	a.deathSent = marked
	b.mu.Unlock()
	b.log.Warn("agent died: its shell is back in the pane's foreground", "agent", agent, "pane", pane, "session", session)
	ended := events.AgentSession{SessionID: session, State: "ended", Reason: SessionEndDied}
	if r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible}); err == nil {
		ended.Message = lastRows(r.Text, 4)
	}
	if !started {
		b.log.Warn("agent's command exited before its session started", "agent", agent, "pane", pane, "shows", ended.Message)
	}
	ack, err := b.append(ctx, agent, "", ended)
	if err != nil {
		b.warnWrite("record the agent's death", err, "agent", agent)
		b.mu.Lock()
		a.deathSent = ""
		b.mu.Unlock()
		return
	}
	b.waitApplied(ctx, agent, ack.Seq)
}

// checkBoundaries reads the env of the pending agents' panes' foreground
// processes (when they run on this machine; in a sandboxed agent's pane,
// those of the sandbox's launch), in one pass over /proc, and reports,
// once per finding, a pane whose env crosses its role's subscription
// boundary. It empties pending.
func (b *Bridge) checkBoundaries(ctx context.Context, pending map[string]bool) {
	type check struct {
		agent, pane, reported string
		role                  roles.Role
		status                events.Status
	}
	var checks []check
	panes := map[string]bool{}
	b.mu.Lock()
	for agent := range pending {
		delete(pending, agent)
		a := b.agents[agent]
		if a == nil || !b.ownedLocked(a) {
			continue
		}
		role, err := b.cfg.Roles.Get(a.role)
		if err != nil {
			continue
		}
		checks = append(checks, check{agent: agent, pane: a.pane, reported: a.violation, role: role, status: a.logStatus})
		panes[a.pane] = true
	}
	b.mu.Unlock()
	if len(checks) == 0 {
		return
	}
	procs := scanPanes(b.cfg.ProcRoot, b.client.Path(), panes)
	b.cfg.Metrics.BoundaryChecks.Inc()
	for _, c := range checks {
		envs := foregroundEnvs(procs[c.pane])
		if c.role.Sandbox != "" {
			envs = sandboxedEnvs(envs)
		}
		violation := ""
		for _, env := range envs {
			if err := c.role.CheckEnv(env); err != nil {
				violation = err.Error()
				break
			}
		}
		if violation == "" || violation == c.reported {
			continue
		}
		status := c.status
		if status == "" {
			status = events.StatusUnknown
		}
		b.log.Warn("pane crosses the subscription boundary", "agent", c.agent, "pane", c.pane, "violation", violation)
		_, err := b.append(ctx, c.agent, "", events.AgentStatusChanged{Status: status, Source: "herdr", Pane: c.pane,
			Detail: "boundary check of the pane's processes", Violation: violation})
		if err != nil {
			b.warnWrite("record boundary violation", err, "agent", c.agent)
			continue
		}
		b.mu.Lock()
		if a := b.agents[c.agent]; a != nil {
			a.violation = violation
		}
		b.mu.Unlock()
	}
}
