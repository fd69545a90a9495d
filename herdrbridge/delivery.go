package herdrbridge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
)

// The ways a prompt reaches a pane, as recorded in AgentTyped.Method.
const (
	MethodPrompt    = "agent.prompt"
	MethodSendInput = "pane.send_input"
	MethodEnter     = "pane.send_keys"
	// MethodLanded: pane.send_input, then Enter as soon as the kind's
	// screen shows the text landed in its composer (Lander), instead of
	// after a fixed pause; used for every agent of a Lander kind, herdr
	// recognising it or not.
	MethodLanded = "pane.send_input+landed"
)

// deliverLoop is one owned agent's delivery worker: it re-decides whenever
// the fold or herdr's view changes, and at least every Poll, until the
// agent is no longer this bridge's.
func (b *Bridge) deliverLoop(ctx context.Context, id string) {
	for {
		b.mu.Lock()
		a := b.agents[id]
		if ctx.Err() != nil || !b.ownedLocked(a) {
			a.worker = false
			b.mu.Unlock()
			return
		}
		ch := a.changed
		b.mu.Unlock()
		b.step(ctx, id)
		t := time.NewTimer(b.cfg.Poll)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// step takes one delivery decision for the agent: settle the turn in
// flight, fail what has expired or can no longer be delivered, or type the
// next turn.
func (b *Bridge) step(ctx context.Context, id string) {
	if b.startCheckDue(id) {
		b.checkDied(ctx, id)
	}
	if b.CaughtUp() {
		// Before the log is read through, an answer already typed
		// would look pending.
		b.dialogs(ctx, id)
	}
	now := b.cfg.Now()
	b.mu.Lock()
	a := b.agents[id]
	if !b.caughtUp || !b.ownedLocked(a) {
		b.mu.Unlock()
		return
	}
	ended := a.sessionEnded()
	endedFor := now.Sub(a.sessionEndedAt)
	endedWhy := a.sessionEndReason
	if endedWhy == "" {
		endedWhy = "its SessionEnd hook"
	}
	lastSeq := a.lastSeq
	if t, ok := b.book.InFlight(id); ok {
		blocked := !a.blockedFrom.IsZero() && now.Sub(a.blockedFrom) >= b.cfg.BlockedTimeout
		b.mu.Unlock()
		switch {
		case ended && t.Kind() == lifecycle.KindCommand && roles.CommandName(t.Command) == "/exit":
			// The command did what it says.
			ack, err := b.append(ctx, id, t.ID, events.AgentReplied{})
			b.settled(ctx, id, ack, err)
		case ended:
			// Typed, perhaps submitted, never finished: never typed again.
			b.fail(ctx, id, t.ID, events.ReasonAgentDied, "the agent's Claude Code session ended while the turn was in flight ("+endedWhy+")")
		case blocked:
			b.fail(ctx, id, t.ID, events.ReasonBlocked, "the agent showed blocked for "+b.cfg.BlockedTimeout.String())
		case t.State == lifecycle.StateTyped && t.Kind() == lifecycle.KindCommand:
			b.resolveCommand(ctx, id, t.ID)
		case t.State == lifecycle.StateTyped:
			b.resolve(ctx, id, t.ID)
		case t.State == lifecycle.StateSubmitted:
			b.settle(ctx, id, t)
		}
		return
	}
	// A dead agent its role restarts keeps the turns sent to it by name.
	restart := ended && b.restartsLocked(a, a.sessionEndClean)
	var expired, orphaned []string
	var released []lifecycle.Turn
	for _, tid := range b.book.Queue(id) {
		t, ok := b.book.Turn(tid)
		switch {
		case !ok:
		case !t.Deadline.IsZero() && now.After(t.Deadline):
			expired = append(expired, tid)
		case ended && t.Releasable():
			// Another agent of the role can take it now.
			released = append(released, t)
		case ended && endedFor >= b.cfg.ExitGrace && !restart:
			orphaned = append(orphaned, tid)
		}
	}
	if restart && len(released) == 0 {
		b.startRestartLocked(a, endedWhy, false)
	}
	next, ok := b.book.Next(id)
	b.mu.Unlock()
	for _, tid := range expired {
		b.fail(ctx, id, tid, events.ReasonTimeout, "the deadline passed while the turn was queued")
	}
	if len(released) > 0 {
		b.release(ctx, id, lastSeq, released, events.ReasonAgentDied, "the agent's Claude Code session ended ("+endedWhy+") before the turn was typed")
	}
	for _, tid := range orphaned {
		b.fail(ctx, id, tid, events.ReasonAgentExited, fmt.Sprintf("the agent's Claude Code session ended and none started again within %s", b.cfg.ExitGrace))
	}
	if len(expired)+len(orphaned)+len(released) > 0 || ended {
		return
	}
	if !ok {
		if !b.preLookFor(ctx, id) {
			b.recheckAttention(ctx, id)
		}
		return
	}
	b.typeTurn(ctx, id, next)
}

// recheckAttention looks again, with backoff, at an agent that needs
// attention and has no turn to type: the shim refuses turns sent to it
// by name meanwhile, so without a look of its own the reason would stand
// after its condition is gone (a person closed the dialog, cleared the
// draft). A readiness check that passes clears it. The restart limit is
// not a condition of the screen: it stands until the agent is registered
// again.
func (b *Bridge) recheckAttention(ctx context.Context, id string) {
	tg, ok := b.snapshot(id)
	if !ok || tg.attention == "" || tg.attention == AttentionRestartLimit {
		return
	}
	b.ready(ctx, id, &tg)
}

// startCheckDue reports whether it is time to look at an agent's pane for
// its shell (checkDied). Every quarter second while herdr's events cannot
// tell of its death: a spawned agent whose session has not started (a
// command that exits at once — not found, a crash on start — leaves the
// shell in the foreground and no hook will ever say so; a look also tells
// a command that runs, see launchWatch), or one that runs without herdr
// seeing an agent in the pane (a command herdr does not recognise). Every
// IdleDeathCheck for any other agent with a live session, idle or not:
// herdr keeps the agent label the hooks reported on a pane whose agent
// was killed, so its events may never tell the death, and a dead idle
// agent would otherwise be noticed only when a turn comes for it. A look
// at a known pane is one read of its first process's stat.
func (b *Bridge) startCheckDue(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[id]
	now := b.cfg.Now()
	if a == nil || !b.ownedLocked(a) || now.Before(a.deathCheck) {
		return false
	}
	every := 250 * time.Millisecond
	switch {
	case a.origin == "spawned" && (!a.sessionSeen || a.sessionLive && a.label == "" && a.fresh):
	case a.sessionLive:
		every = IdleDeathCheck
	default:
		return false
	}
	a.deathCheck = now.Add(every)
	return true
}

// IdleDeathCheck is how often a live agent's pane is looked at for its
// shell back in the foreground (its process died), so a dead agent is
// noticed, and restarted under its role's policy, within a few seconds
// though no turn comes for it.
const IdleDeathCheck = time.Second

// release gives role turns queued on an agent that can no longer type
// them back to their roles (turns.Release), each guarded by the agent's
// last sequence as folded: it excludes an AgentTyped of the same
// assignment, and after a conflict the next step decides again on the
// fresh fold. The RoleQueued that hands each turn to a router follows;
// if it is lost, the routers' reclaim appends it.
func (b *Bridge) release(ctx context.Context, agent string, lastSeq uint64, ts []lifecycle.Turn, reason, msg string) {
	for _, t := range ts {
		ev, err := turns.Release(t, reason, msg)
		if err != nil {
			continue
		}
		ev.Source, ev.Time = b.source, b.cfg.Now()
		if !b.writes.wait(ctx) {
			return
		}
		ack, err := b.cfg.Log.Append(ctx, ev, guard(agent, lastSeq))
		b.writes.done(ctx, err)
		if errors.Is(err, events.ErrConcurrency) {
			b.catchUp(ctx, agent)
			return
		}
		if err != nil {
			b.warnWrite("release turn", err, "agent", agent, "turn", t.ID)
			return
		}
		lastSeq = ack.Seq
		b.log.Info("released a turn back to its role", "agent", agent, "turn", t.ID, "role", t.Role, "reason", reason)
		t.Releases, t.Agent = ev.Data.(events.AgentReleased).Attempt, ""
		if rq, err := turns.Requeue(t); err == nil {
			rq.Source, rq.Time = b.source, b.cfg.Now()
			if _, err := b.cfg.Log.Append(ctx, rq); err != nil {
				b.warnWrite("requeue released turn", err, "agent", agent, "turn", t.ID)
			}
		}
		b.waitApplied(ctx, agent, ack.Seq)
	}
}

// fail ends a turn without a reply.
func (b *Bridge) fail(ctx context.Context, agent, turn, reason, msg string) {
	ack, err := b.append(ctx, agent, turn, events.AgentFailed{Reason: reason, Message: msg})
	if err != nil {
		b.warnWrite("record failed turn", err, "agent", agent, "turn", turn)
		return
	}
	b.waitApplied(ctx, agent, ack.Seq)
}

// target is what typeTurn knows about the agent when it decides.
type target struct {
	pane, role, cwd string
	lastSeq         uint64
	recognised      bool // herdr will agent.prompt it
	statuses        Statuses
	freshView       bool
	status          herdrapi.AgentStatus
	hook            events.Status
	clears          int
	attention       string
	hooked          bool
	kind            Kind
}

// snapshot copies what a delivery decision needs, under the lock.
func (b *Bridge) snapshot(agent string) (target, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	if !b.ownedLocked(a) || b.herdr != linkUp {
		return target{}, false
	}
	// A spawned agent is given StartupGrace for its session to start,
	// unless its kind starts one only with the first prompt.
	starting := a.origin == "spawned" && !a.sessionSeen && !a.kind().LazySession() && b.cfg.Now().Sub(a.registeredAt) < b.cfg.StartupGrace
	if starting || b.cfg.Now().Before(a.nextCheck) {
		return target{}, false
	}
	if _, err := KindOf(a.kindName); err != nil {
		return target{}, false // registered by a fleetd that knows a kind this one does not
	}
	cwd := a.cwd
	if cwd == "" || within(a.sessionCwd, a.cwd) {
		// The directory the agent's hooks report, where its @ mentions
		// resolve; but it comes from inside the agent, so a file is
		// handed over there only below the directory it was registered
		// with, when it has one (an adopted pane may not).
		cwd = a.sessionCwd
	}
	return target{
		pane: a.pane, role: a.role, cwd: cwd, lastSeq: a.lastSeq,
		recognised: a.recognised(), freshView: a.fresh, status: a.status,
		hook: a.hookStatus, clears: a.clears, attention: a.attention, hooked: a.sessionSeen, kind: a.kind(),
		statuses: a.statuses(),
	}, true
}

// within reports whether dir is base or below it (both absolute, clean).
func within(dir, base string) bool {
	if dir == "" || base == "" || !filepath.IsAbs(dir) {
		return false
	}
	rel, err := filepath.Rel(base, filepath.Clean(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// typeTurn delivers one turn. Right before typing it checks, with what
// herdr's events and the agent's hooks already said and one look at the
// screen, that the agent can take a prompt: its Claude Code is the pane's
// foreground (not a shell), idle, and its prompt box is on screen and
// empty. (The look may have been taken ahead, while the turn's queued
// event was being stored, when this gateway admitted it: Expect; it
// stands only if nothing but that event changed the agent since.) It
// then records AgentTyped (write-ahead, guarded by the agent's last
// sequence so a concurrent writer forces a fresh decision) and only then
// types, the way the plan says. Whatever happens after the append,
// the turn is never typed again; a refusal by herdr that wrote nothing
// sends the turn back to the head of its queue.
func (b *Bridge) typeTurn(ctx context.Context, agent string, t lifecycle.Turn) {
	tg, ok := b.snapshot(agent)
	if !ok || !b.lookedFor(agent, t) && !b.ready(ctx, agent, &tg) {
		return
	}
	plan, typed, err := b.plan(t, tg)
	if err != nil {
		b.fail(ctx, agent, t.ID, events.ReasonEmptyPrompt, err.Error())
		return
	}
	role, _ := b.cfg.Roles.Get(tg.role)
	typed.Clear = role.FreshContext && t.Kind() == lifecycle.KindPrompt
	typed.Method = MethodSendInput
	if _, ok := tg.kind.(Lander); ok {
		typed.Method = MethodLanded
	} else if tg.recognised && len(plan.Pieces) == 1 && !plan.BangFirst && !plan.LeftBeforeEnter {
		typed.Method = MethodPrompt
	}
	ack, err := b.append(ctx, agent, t.ID, typed, guard(agent, tg.lastSeq))
	if errors.Is(err, events.ErrConcurrency) {
		b.catchUp(ctx, agent)
		return
	}
	if err != nil {
		b.warnWrite("record typed", err, "agent", agent, "turn", t.ID)
		sleep(ctx, b.cfg.Poll)
		return
	}
	b.cfg.Metrics.TurnsTyped.Inc()
	wrote, err := b.execute(ctx, agent, tg, typed, plan)
	b.log.Info("typed", "agent", agent, "turn", t.ID, "pane", tg.pane, "method", typed.Method, "delivery", typed.Delivery, "err", err)
	b.waitApplied(ctx, agent, ack.Seq)
	switch {
	case err == nil:
	case !wrote && errors.Is(err, herdrapi.ErrPaneNotFound):
		b.fail(ctx, agent, t.ID, events.ReasonPaneExited, "herdr refused the prompt: "+err.Error())
	case !wrote:
		b.defer_(ctx, agent, t, err)
	case errors.Is(err, ErrShellMode):
		// The text sits in a shell-mode composer, unsubmitted: clear it
		// (never Enter), and fail the turn saying so.
		rec := b.recoverComposer(ctx, agent, tg.pane, tg.kind)
		if !rec.ok {
			b.attend(ctx, agent, AttentionScreen, rec.String())
		}
		b.fail(ctx, agent, t.ID, events.ReasonIndeterminate, "not submitted: "+err.Error()+" (a person's \"!\" at the pane?); "+rec.String())
	default:
		// Part of the text may sit in the composer: never retype it.
		b.fail(ctx, agent, t.ID, events.ReasonIndeterminate, "typing stopped part-way: "+err.Error())
		b.attend(ctx, agent, "partial_prompt", "typing stopped part-way; the composer may hold part of a prompt: "+err.Error())
	}
}

// plan decides how the turn is typed and fills in AgentTyped to match. A
// file delivery writes its file here, before anything is recorded.
func (b *Bridge) plan(t lifecycle.Turn, tg target) (Plan, events.AgentTyped, error) {
	typed := events.AgentTyped{Pane: tg.pane}
	var plan Plan
	if t.Kind() == lifecycle.KindCommand {
		plan = tg.kind.PlanCommand(t.Command)
	} else {
		text := lifecycle.NormalizeText(t.Text)
		if text == "" {
			return Plan{}, typed, errors.New("nothing left to type once control sequences were removed")
		}
		plan = tg.kind.PlanText(text, b.cfg.Limits)
		if plan.Delivery == DeliveryFile {
			file, ref, err := writeInbox(tg.cwd, t.ID, text, plan.Why)
			if err != nil {
				return Plan{}, typed, fmt.Errorf("the text must go as a file (%s), and that failed: %w", plan.Why, err)
			}
			prompt := tg.kind.HandOver(ref, len(text), plan.Why)
			plan.Pieces = []string{prompt}
			typed.File, typed.Prompt = file, prompt
		}
		typed.Bytes = len(text)
	}
	typed.Delivery = plan.Delivery
	if plan.Delivery == DeliveryPieces {
		typed.Pieces = len(plan.Pieces)
	}
	return plan, typed, nil
}

// execute types the plan: an optional "/clear" first (a LazyClearer
// kind's own command for a new session), then the pastes, the cursor keys
// and Enter. wrote reports whether anything reached the pane before an
// error.
func (b *Bridge) execute(ctx context.Context, agent string, tg target, typed events.AgentTyped, plan Plan) (wrote bool, err error) {
	if typed.Clear {
		command := "/clear"
		if lc, ok := tg.kind.(LazyClearer); ok {
			command = lc.ClearCommand()
		}
		if err := b.submit(ctx, tg, typed.Method, command); err != nil {
			return false, err
		}
		if err := b.awaitClear(ctx, agent, tg); err != nil {
			return true, err
		}
	}
	if typed.Method == MethodPrompt {
		_, err := b.client.Prompt(ctx, herdrapi.PromptRequest{Target: tg.pane, Text: plan.Pieces[0]})
		return typed.Clear, err
	}
	wrote = typed.Clear
	for i, piece := range plan.Pieces {
		if err := b.client.SendInput(ctx, tg.pane, piece); err != nil {
			return wrote, err
		}
		wrote = true
		if i == 0 && plan.BangFirst {
			// " !" → "!" in prompt mode, the cursor after it.
			if err := b.client.SendKeys(ctx, tg.pane, "left", "backspace", "right"); err != nil {
				return true, err
			}
		}
	}
	return true, b.enter(ctx, tg, typed.Method, plan.Shows(), plan.LeftBeforeEnter)
}

// enter presses Enter after text was typed: once the composer shows it
// (MethodLanded), else after the fixed pause, so Enter never arrives
// while the agent is still taking the paste in (it would join it as a
// newline and leave the prompt unsubmitted). left presses Left first —
// then, not right after the paste: a Left the CLI takes before the paste
// lands leaves the cursor after a trailing backslash, and Enter there
// makes a newline (the real Claude Code did so once in a few dozen
// turns on a busy machine, and the turn hung until Enter was pressed
// again, its backslash lost).
func (b *Bridge) enter(ctx context.Context, tg target, method, text string, left bool) error {
	// settle waits until Enter may go: the text landed, or the pause.
	settle := func(pause time.Duration) error {
		if l, ok := tg.kind.(Lander); ok && method == MethodLanded {
			return b.awaitLanding(ctx, tg.pane, l, text)
		}
		if !sleep(ctx, pause) {
			return ctx.Err()
		}
		return nil
	}
	if err := settle(b.cfg.EnterDelay); err != nil {
		return err
	}
	if _, landed := tg.kind.(Lander); !landed || method != MethodLanded {
		// No landing read said what the composer holds: read it once.
		// A person's "!" a moment before the paste (the look before it
		// said ready) puts the text in the CLI's shell mode, and Enter
		// there runs it as a command.
		if r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: tg.pane, Source: herdrapi.SourceVisible}); err == nil && tg.kind.ParseComposer(r.Text).Bash {
			return ErrShellMode
		}
	}
	if left {
		// A screen read (or a moment) between the Left and the Enter,
		// as there was between the paste and the Left.
		if err := b.client.SendKeys(ctx, tg.pane, "left"); err != nil {
			return err
		}
		if err := settle(leftGap); err != nil {
			return err
		}
	}
	return b.client.SendKeys(ctx, tg.pane, "enter")
}

// leftGap is the pause between the Left before Enter and the Enter where
// the composer cannot be read.
const leftGap = 50 * time.Millisecond

// submit types one short line and Enter the way the turn's method says:
// agent.prompt, or a paste and Enter (enter).
func (b *Bridge) submit(ctx context.Context, tg target, method, line string) error {
	if method == MethodPrompt {
		_, err := b.client.Prompt(ctx, herdrapi.PromptRequest{Target: tg.pane, Text: line})
		return err
	}
	if err := b.client.SendInput(ctx, tg.pane, line); err != nil {
		return err
	}
	return b.enter(ctx, tg, method, line, false)
}

// awaitClear waits until the "/clear" typed before a turn took effect: the
// agent's hooks report a session started by a clear, or (an agent without
// hooks) its prompt box is empty again, or (a LazyClearer kind, whose new
// session starts only with the prompt about to be typed) its screen shows
// the new session. A clear its hooks reported is done once the screen
// also shows the empty composer and no work: the CLI may still be at it
// (Gemini CLI 0.61.0 runs its SessionStart hook after reporting it, shown
// as "Executing Hook", and a paste meanwhile was lost whole, measured).
func (b *Bridge) awaitClear(ctx context.Context, agent string, tg target) error {
	deadline := b.cfg.Now().Add(b.cfg.CommandTimeout)
	wait := b.cfg.Poll
	lc, lazy := tg.kind.(LazyClearer)
	for {
		b.mu.Lock()
		a := b.agents[agent]
		done, ch := a != nil && a.clears > tg.clears, b.agentLocked(agent).changed
		b.mu.Unlock()
		r, rerr := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: tg.pane, Source: herdrapi.SourceVisible})
		settled := rerr == nil && tg.kind.ParseComposer(r.Text).Empty() && !tg.kind.Working(r.Text)
		switch {
		case done && (settled || rerr != nil):
			// A screen that cannot be read leaves the hooks' word.
			return nil
		case !tg.hooked && rerr == nil && tg.kind.ParseComposer(r.Text).Empty():
			return nil
		case lazy && settled && lc.Cleared(r.Text):
			return nil
		}
		if b.cfg.Now().After(deadline) {
			return fmt.Errorf("the /clear typed first was not seen to take effect within %s", b.cfg.CommandTimeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
			wait = min(2*wait, time.Second)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// defer_ sends a turn herdr refused (having typed nothing) back to the
// head of its agent's queue, or fails it after MaxDeferrals.
func (b *Bridge) defer_(ctx context.Context, agent string, t lifecycle.Turn, cause error) {
	if errors.Is(cause, herdrapi.ErrAgentNotReady) || errors.Is(cause, herdrapi.ErrAgentNotFound) {
		// herdr does not see the agent as the pane's foreground process
		// (a wrapped launch, a child command): from now on type into the
		// pane as into one herdr does not recognise, when the hooks say
		// the agent is idle.
		b.mu.Lock()
		if a := b.agents[agent]; a != nil {
			a.promptRefused = true
		}
		b.mu.Unlock()
	}
	if t.Deferrals+1 >= b.cfg.MaxDeferrals {
		b.fail(ctx, agent, t.ID, events.ReasonNotReady, fmt.Sprintf("herdr refused to type the turn %d times, last: %v", t.Deferrals+1, cause))
		return
	}
	ack, err := b.append(ctx, agent, t.ID, events.AgentDeferred{Reason: refusalReason(cause), Message: cause.Error()})
	if err != nil {
		b.warnWrite("record deferred turn", err, "agent", agent, "turn", t.ID)
		return
	}
	b.log.Info("deferred", "agent", agent, "turn", t.ID, "err", cause)
	b.waitApplied(ctx, agent, ack.Seq)
	b.backoff(agent)
}

// refusalReason is the code of a herdr refusal, or a word for a transport
// error.
func refusalReason(err error) string {
	var api *herdrapi.APIError
	if errors.As(err, &api) {
		return api.Code
	}
	if errors.Is(err, herdrapi.ErrNotRunning) {
		return "herdr_unreachable"
	}
	return "herdr_error"
}

// backoff spaces the next readiness check of an agent that was not ready,
// from Poll, doubling up to MaxReconnectBackoff; any event about the agent
// still wakes its worker, but it looks again only when the time has come.
func (b *Bridge) backoff(agent string) { b.backoffFrom(agent, b.cfg.Poll) }

// backoffFrom is backoff starting at first: a prompt box that is about to
// be drawn (the agent just went idle) is worth looking for again soon.
func (b *Bridge) backoffFrom(agent string, first time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	if a == nil {
		return
	}
	a.backoff = min(max(2*a.backoff, first), b.cfg.MaxReconnectBackoff)
	a.nextCheck = b.cfg.Now().Add(a.backoff)
}

// resetBackoff makes the next readiness check immediate again.
func (a *agentState) resetBackoff() { a.backoff, a.nextCheck = 0, time.Time{} }
