package herdrbridge

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// The ways a prompt reaches a pane, as recorded in AgentTyped.Method.
const (
	MethodPrompt    = "agent.prompt"
	MethodSendInput = "pane.send_input"
	MethodEnter     = "pane.send_keys"
)

// ReasonEmptyPrompt fails a turn whose text is empty once control
// sequences are stripped: there is nothing safe to type.
const ReasonEmptyPrompt = "empty_prompt"

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
		ch := b.changed
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

// step takes one delivery decision for the agent: resolve the turn in
// flight, fail what has expired, or type the next turn.
func (b *Bridge) step(ctx context.Context, id string) {
	now := b.cfg.Now()
	b.mu.Lock()
	a := b.agents[id]
	if !b.caughtUp || !b.ownedLocked(a) {
		b.mu.Unlock()
		return
	}
	if t, ok := b.book.InFlight(id); ok {
		blocked := !a.blockedFrom.IsZero() && now.Sub(a.blockedFrom) >= b.cfg.BlockedTimeout
		b.mu.Unlock()
		switch {
		case blocked:
			b.fail(ctx, id, t.ID, events.ReasonBlocked, "the agent showed blocked for "+b.cfg.BlockedTimeout.String())
		case t.State == lifecycle.StateTyped:
			b.resolve(ctx, id, t.ID)
		}
		return
	}
	var expired []string
	for _, tid := range b.book.Queue(id) {
		if t, ok := b.book.Turn(tid); ok && !t.Deadline.IsZero() && now.After(t.Deadline) {
			expired = append(expired, tid)
		}
	}
	next, ok := b.book.Next(id)
	b.mu.Unlock()
	if len(expired) > 0 {
		for _, tid := range expired {
			b.fail(ctx, id, tid, events.ReasonTimeout, "the deadline passed while the turn was queued")
		}
		return
	}
	if ok {
		b.typeTurn(ctx, id, next)
	}
}

// fail ends a turn without a reply.
func (b *Bridge) fail(ctx context.Context, agent, turn, reason, msg string) {
	ack, err := b.append(ctx, agent, turn, events.AgentFailed{Reason: reason, Message: msg})
	if err != nil {
		b.log.Warn("record failed turn", "agent", agent, "turn", turn, "err", err)
		return
	}
	b.waitApplied(ctx, ack.Seq)
}

// typeTurn delivers one turn: check right before typing that herdr shows
// the agent ready, record AgentTyped (write-ahead, guarded by the agent's
// last sequence so a concurrent writer forces a fresh decision), and only
// then type. Whatever happens after the append, the turn is never typed
// again: resolve settles it.
func (b *Bridge) typeTurn(ctx context.Context, agent string, t lifecycle.Turn) {
	b.mu.Lock()
	a := b.agents[agent]
	pane, hook, lastSeq, up := a.pane, a.hookStatus, a.lastSeq, b.herdr == linkUp
	starting := a.origin == "spawned" && !a.sessionSeen && b.cfg.Now().Sub(a.registeredAt) < b.cfg.StartupGrace
	b.mu.Unlock()
	if !up || starting {
		return
	}
	method, seq0, ready := b.readiness(ctx, pane, hook)
	if !ready {
		return
	}
	text := StripControl(t.Text)
	if strings.TrimSpace(text) == "" {
		b.fail(ctx, agent, t.ID, ReasonEmptyPrompt, "nothing left to type once control sequences were stripped")
		return
	}
	ack, err := b.append(ctx, agent, t.ID, events.AgentTyped{Pane: pane, Method: method, StateChangeSeq: seq0, Bytes: len(text)},
		guard(agent, lastSeq))
	if errors.Is(err, events.ErrConcurrency) {
		b.catchUp(ctx, agent)
		return
	}
	if err != nil {
		b.log.Warn("record typed", "agent", agent, "turn", t.ID, "err", err)
		sleep(ctx, b.cfg.Poll)
		return
	}
	// Typing must not be cut short by the worker's ctx between text and
	// Enter more than necessary; the client's own deadline bounds it.
	switch method {
	case MethodPrompt:
		_, err = b.client.Prompt(ctx, PromptRequest{Target: pane, Text: text})
	case MethodSendInput:
		err = b.client.SendInput(ctx, pane, text)
		if err == nil && sleep(ctx, b.cfg.EnterDelay) {
			err = b.client.SendKeys(ctx, pane, "enter")
		}
	}
	b.log.Info("typed", "agent", agent, "turn", t.ID, "pane", pane, "method", method, "err", err)
	if reason, refused := refusal(err); refused {
		// herdr wrote nothing: the turn cannot be in the pane.
		b.fail(ctx, agent, t.ID, reason, "herdr refused the prompt: "+err.Error())
		return
	}
	b.waitApplied(ctx, ack.Seq)
}

// refusal classifies a typing error herdr raises before writing anything,
// so the turn is known not to have reached the pane.
func refusal(err error) (string, bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, ErrPaneNotFound), errors.Is(err, ErrAgentNotFound):
		return events.ReasonPaneExited, true
	case errors.Is(err, ErrAgentBlocked):
		return events.ReasonBlocked, true
	case errors.Is(err, ErrAgentNotReady), errors.Is(err, ErrEmptyAgentPrompt), errors.Is(err, ErrInvalidRequest):
		return events.ReasonIndeterminate, true
	}
	return "", false
}

// readiness asks herdr, right before typing, whether the pane can take a
// prompt and how to type it: a recognised agent must be idle or done (not
// working, blocked, or still launching) and gets agent.prompt; a pane
// herdr does not recognise has no herdr status, so it is typed into with
// pane.send_input only when its hooks last reported it idle.
func (b *Bridge) readiness(ctx context.Context, pane string, hook events.Status) (method string, seq uint64, ok bool) {
	info, err := b.client.Agent(ctx, pane)
	if err == nil && info.Agent != "" {
		b.note(pane, info.AgentStatus, info.StateChangeSeq, info.Agent)
		if !info.AgentStatus.Ready() || info.LaunchPending {
			return "", 0, false
		}
		return MethodPrompt, info.StateChangeSeq, true
	}
	if err != nil && !errors.Is(err, ErrAgentNotFound) {
		return "", 0, false
	}
	p, err := b.client.Pane(ctx, pane)
	if err != nil || p.Agent != "" {
		return "", 0, false
	}
	if !hook.Ready() {
		return "", 0, false
	}
	return MethodSendInput, 0, true
}

// note records an observation a worker made (it never appends statuses:
// the herdr watcher is their only writer, so none is written twice).
func (b *Bridge) note(pane string, st AgentStatus, seq uint64, label string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.agents {
		if a.pane == pane && b.ownedLocked(a) {
			b.noteLocked(a, st, seq, label)
		}
	}
}

// resolve settles a typed turn without ever typing it again. It ends as
// soon as the turn leaves "typed" (the hook's AgentSubmitted, a reply, a
// failure); it records AgentSubmitted{via herdr} when herdr shows a state
// change since the typing; after SubmitTimeout it presses Enter once more
// (recorded first, as AgentTyped{Enter:1}, so a restart never presses it
// twice); after another SubmitTimeout the turn fails as indeterminate.
// A bridge restarted mid-way starts a fresh window, giving spooled hook
// events time to arrive.
func (b *Bridge) resolve(ctx context.Context, agent, turn string) {
	deadline := b.cfg.Now().Add(b.cfg.SubmitTimeout)
	var evidenceAt time.Time // when herdr first showed the prompt was taken
	for ctx.Err() == nil {
		b.mu.Lock()
		a := b.agents[agent]
		t, ok := b.book.Turn(turn)
		if !ok || t.State != lifecycle.StateTyped || !b.ownedLocked(a) {
			b.mu.Unlock()
			return
		}
		pane, lastSeq, up, enter := a.pane, a.lastSeq, b.herdr == linkUp, b.enters[turn]
		hooked := a.sessionSeen
		seen := a.workingSeq > t.StateChangeSeq && t.Method != MethodSendInput
		ch := b.changed
		b.mu.Unlock()

		evidence := uint64(0)
		if seen {
			evidence = t.StateChangeSeq + 1
		}
		if evidence == 0 && up && t.Method != MethodSendInput {
			if info, err := b.client.Agent(ctx, pane); err == nil {
				b.note(pane, info.AgentStatus, info.StateChangeSeq, info.Agent)
				if info.StateChangeSeq > t.StateChangeSeq && info.AgentStatus != StatusUnknown {
					evidence = info.StateChangeSeq
				}
			}
		}
		now := b.cfg.Now()
		if evidence > 0 && evidenceAt.IsZero() {
			evidenceAt = now
		}
		var ack events.Ack
		var err error
		switch {
		case evidence > 0 && hooked && now.Before(evidenceAt.Add(b.cfg.HookGrace)):
			// The agent's own UserPromptSubmit hook (with Claude's
			// prompt id) usually lands within milliseconds of herdr
			// seeing it work: give it the chance to be the proof.
			timer := time.NewTimer(min(b.cfg.Poll, evidenceAt.Add(b.cfg.HookGrace).Sub(now)))
			select {
			case <-ch:
			case <-timer.C:
			case <-ctx.Done():
			}
			timer.Stop()
			continue
		case evidence > 0:
			ack, err = b.append(ctx, agent, turn, events.AgentSubmitted{Via: "herdr", StateChangeSeq: evidence}, guard(agent, lastSeq))
		case now.Before(deadline):
			wait := min(b.cfg.Poll, deadline.Sub(now))
			timer := time.NewTimer(wait)
			select {
			case <-ch:
			case <-timer.C:
			case <-ctx.Done():
			}
			timer.Stop()
			continue
		case !enter:
			if !up {
				deadline = now.Add(b.cfg.Poll) // Enter needs herdr; wait for it
				continue
			}
			ack, err = b.append(ctx, agent, turn, events.AgentTyped{Pane: pane, Method: MethodEnter, StateChangeSeq: t.StateChangeSeq, Enter: 1},
				guard(agent, lastSeq))
			if err == nil {
				kerr := b.client.SendKeys(ctx, pane, "enter")
				b.log.Info("no submission seen: pressed Enter once more", "agent", agent, "turn", turn, "err", kerr)
				deadline = b.cfg.Now().Add(b.cfg.SubmitTimeout)
			}
		default:
			ack, err = b.append(ctx, agent, turn, events.AgentFailed{Reason: events.ReasonIndeterminate,
				Message: "no proof of submission after typing and one more Enter; not retyped"}, guard(agent, lastSeq))
		}
		switch {
		case errors.Is(err, events.ErrConcurrency):
			b.catchUp(ctx, agent)
		case err != nil:
			b.log.Warn("record turn progress", "agent", agent, "turn", turn, "err", err)
			sleep(ctx, b.cfg.Poll)
		default:
			b.waitApplied(ctx, ack.Seq)
		}
	}
}
