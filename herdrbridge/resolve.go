package herdrbridge

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

// inFlight is what the settling of a turn in flight needs to know about
// its agent, copied under the lock.
type inFlight struct {
	turn                lifecycle.Turn
	pane                string
	lastSeq             uint64
	up, hooked, ended   bool
	recognised, working bool // herdr recognises the agent; it showed working since the typing
	readySince          time.Time
	strayAt             time.Time
	sessions            []string // sources of sessions started since the typing
	changed             <-chan struct{}
	kind                Kind
}

func (b *Bridge) inFlight(agent, turn string) (inFlight, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	t, ok := b.book.Turn(turn)
	if !ok || !t.State.InFlight() || !b.ownedLocked(a) {
		return inFlight{}, false
	}
	return inFlight{
		turn: t, pane: a.pane, lastSeq: a.lastSeq, up: b.herdr == linkUp, hooked: a.sessionSeen, ended: a.sessionEnded(),
		recognised: a.recognised(), working: a.busySinceTyped,
		readySince: a.readySince, strayAt: a.strayAt, sessions: a.sessionsSinceTyped, changed: a.changed, kind: a.kind(),
	}, true
}

// whileTyped is the loop of the two resolvers of a typed turn: it yields
// the turn's inFlight and the time, afresh each time round, until ctx
// ends, the turn leaves "typed", or its session ends (step settles that
// turn).
func (b *Bridge) whileTyped(ctx context.Context, agent, turn string) iter.Seq2[inFlight, time.Time] {
	return func(yield func(inFlight, time.Time) bool) {
		for ctx.Err() == nil {
			f, ok := b.inFlight(agent, turn)
			if !ok || f.turn.State != lifecycle.StateTyped || f.ended || !yield(f, b.cfg.Now()) {
				return
			}
		}
	}
}

// wait sleeps until d passes, something changes, or ctx ends.
func wait(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// resolve settles a typed prompt turn without ever typing it again. It
// ends as soon as the turn leaves "typed" (the hook's AgentSubmitted, a
// reply, a failure). Evidence that the agent took the prompt, in order of
// preference: its UserPromptSubmit hook (with Claude's prompt id); herdr
// showing it working since the typing (given HookGrace for the hook to be
// the proof); its prompt box emptied. After SubmitTimeout without any, it
// presses Enter once more (recorded first, as AgentTyped{Enter:1}, so a
// restart never presses it twice) if the box still holds the text (never
// in bash mode); after another SubmitTimeout, or at once when the box is
// not on screen, it brings the prompt box back (recoverComposer: Escape
// closes what the typing opened, clears a draft) and fails the turn as
// indeterminate, saying what the screen showed — or, when the box cannot
// be brought back, the agent needs attention (AttentionScreen). A bridge
// restarted mid-way starts a fresh window, giving spooled hook events time
// to arrive. A kind whose CLI may drop the Enter after a paste
// (EnterDropper) gets that one extra Enter early instead (enterAgain).
func (b *Bridge) resolve(ctx context.Context, agent, turn string) {
	start := b.cfg.Now()
	deadline := start.Add(b.cfg.SubmitTimeout)
	var evidenceAt time.Time
	var recovered string // the failure's message, once the screen was brought back
	// early is when to look next for a dropped Enter (zero: not at all);
	// dropped is when a look first showed one.
	var early, dropped time.Time
	if f, ok := b.inFlight(agent, turn); ok {
		if d, ok := f.kind.(EnterDropper); ok && f.turn.Enter == 0 && d.EnterAgainAfter() < b.cfg.SubmitTimeout {
			early = start.Add(d.EnterAgainAfter())
		}
	}
	for f, now := range b.whileTyped(ctx, agent, turn) {
		t := f.turn
		evidence := f.working && f.recognised && t.Method != MethodSendInput
		if evidence && evidenceAt.IsZero() {
			evidenceAt = now
		}
		var ack events.Ack
		var err error
		switch {
		case evidence && f.hooked && now.Before(evidenceAt.Add(b.cfg.HookGrace)):
			// The agent's own UserPromptSubmit hook (with Claude's prompt
			// id) usually lands within milliseconds of herdr seeing it
			// work: give it the chance to be the proof.
			wait(ctx, f.changed, min(b.cfg.Poll, evidenceAt.Add(b.cfg.HookGrace).Sub(now)))
			continue
		case evidence:
			ack, err = b.append(ctx, agent, turn, events.AgentSubmitted{Via: "herdr"}, guard(agent, f.lastSeq))
		case !early.IsZero() && !now.Before(early) && now.Before(deadline):
			var pressed bool
			if early, dropped, pressed, ack, err = b.enterAgain(ctx, agent, f, now, dropped); !pressed {
				continue
			}
			switch {
			case err == nil:
				// As after the Enter at SubmitTimeout: as long again for
				// its proof before the turn fails.
				deadline = b.cfg.Now().Add(b.cfg.SubmitTimeout)
			case errors.Is(err, events.ErrConcurrency):
				// Another event of the agent came first (the hook's
				// proof, or any other): nothing was pressed; once caught
				// up, look afresh, twice, if the turn is still typed.
				early = b.cfg.Now()
			}
		case now.Before(deadline):
			next := deadline
			if !early.IsZero() && early.Before(next) {
				next = early
			}
			wait(ctx, f.changed, min(b.cfg.Poll, next.Sub(now)))
			continue
		case now.Before(b.writes.lastRefused().Add(b.cfg.SubmitTimeout)):
			// The log refused writes lately: the hook's proof of
			// submission is spooled and comes once the log takes writes
			// again. Give it a fresh window rather than press Enter or
			// give up meanwhile.
			deadline = b.writes.lastRefused().Add(b.cfg.SubmitTimeout)
			continue
		case !f.up:
			deadline = now.Add(b.cfg.Poll) // the screen and Enter need herdr; wait for it
			continue
		case recovered != "":
			// The screen was brought back already (a concurrent write made
			// the failure's append retry): the empty box now is fleetd's
			// doing, not proof of submission.
			ack, err = b.append(ctx, agent, turn, events.AgentFailed{Reason: events.ReasonIndeterminate, Message: recovered}, guard(agent, f.lastSeq))
		default:
			box, rerr := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: f.pane, Source: herdrapi.SourceVisible})
			c := f.kind.ParseComposer(box.Text)
			switch {
			case rerr == nil && c.Empty():
				// The box emptied: the agent took the prompt, and neither
				// its hook nor herdr said so in time.
				ack, err = b.append(ctx, agent, turn, events.AgentSubmitted{Via: "screen"}, guard(agent, f.lastSeq))
			case t.Enter == 0 && rerr == nil && c.Visible && c.Text != "" && !c.Bash:
				// Never Enter in bash mode: the box would run it in a shell.
				ack, err = b.append(ctx, agent, turn, events.AgentTyped{Pane: f.pane, Method: MethodEnter, Enter: 1}, guard(agent, f.lastSeq))
				if err == nil {
					kerr := b.client.SendKeys(ctx, f.pane, "enter")
					b.log.Info("no submission seen: pressed Enter once more", "agent", agent, "turn", turn, "err", kerr)
					deadline = b.cfg.Now().Add(b.cfg.SubmitTimeout)
				}
			case rerr != nil:
				ack, err = b.append(ctx, agent, turn, events.AgentFailed{Reason: events.ReasonIndeterminate,
					Message: "no proof of submission, and the screen could not be read: " + rerr.Error()}, guard(agent, f.lastSeq))
			default:
				// Whatever the typing left on screen — a menu or dialog the
				// text opened, a draft, bash mode — must not wedge the
				// next turn: bring the prompt box back, then fail this
				// one, saying what was seen and done.
				why := "no proof of submission, and the prompt box is not on screen"
				if t.Enter > 0 {
					why = "no proof of submission after typing and one more Enter"
				}
				rec := b.recoverComposer(ctx, agent, f.pane, f.kind)
				recovered = why + "; " + rec.String() + "; not retyped"
				b.log.Warn("typed turn not taken", "agent", agent, "turn", turn, "screen", rec.String())
				if !rec.ok {
					b.attend(ctx, agent, AttentionScreen, rec.String())
				}
				if fresh, ok := b.inFlight(agent, turn); ok {
					f = fresh
				}
				ack, err = b.append(ctx, agent, turn, events.AgentFailed{Reason: events.ReasonIndeterminate, Message: recovered}, guard(agent, f.lastSeq))
			}
		}
		b.settled(ctx, agent, ack, err)
	}
}

// enterAgain looks, for resolve, at the screen of a typed turn whose
// kind may drop the Enter after a paste (EnterDropper), and presses
// Enter once more — recorded first as AgentTyped{Enter:1}, guarded by
// the agent's last sequence, so the hook's proof of submission arriving
// meanwhile refuses it — once two looks EnterAgainConfirm apart both
// showed the composer holding the typed text, idle, with no proof of
// submission (nor herdr seeing work) since. A look that shows anything
// else ends the early path (next is zero): the turn then settles as any
// other, its extra Enter at SubmitTimeout. pressed reports an append
// made (ack, err as settled takes them).
func (b *Bridge) enterAgain(ctx context.Context, agent string, f inFlight, now, dropped time.Time) (next, seen time.Time, pressed bool, ack events.Ack, err error) {
	d, _ := f.kind.(EnterDropper)
	if !f.up || f.working || f.turn.Enter > 0 {
		return time.Time{}, time.Time{}, false, ack, nil
	}
	box, rerr := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: f.pane, Source: herdrapi.SourceVisible})
	if rerr != nil || !d.Unsubmitted(box.Text, shownText(f.turn, f.kind, b.cfg.Limits)) {
		return time.Time{}, time.Time{}, false, ack, nil
	}
	if dropped.IsZero() {
		return now.Add(EnterAgainConfirm), now, false, ack, nil // look again
	}
	ack, err = b.append(ctx, agent, f.turn.ID, events.AgentTyped{Pane: f.pane, Method: MethodEnter, Enter: 1}, guard(agent, f.lastSeq))
	if err == nil {
		kerr := b.client.SendKeys(ctx, f.pane, "enter")
		b.log.Info("the Enter after the paste was dropped: pressed Enter once more", "agent", agent, "turn", f.turn.ID,
			"shown_for", now.Sub(dropped), "err", kerr)
	}
	return time.Time{}, time.Time{}, true, ack, err
}

// shownText is what a typed turn left in an empty composer (Plan.Shows):
// the hand-over prompt of a file delivery, else the text as its kind
// plans it.
func shownText(t lifecycle.Turn, k Kind, l Limits) string {
	if t.Prompt != "" {
		return t.Prompt
	}
	return k.PlanText(lifecycle.NormalizeText(t.Text), l).Shows()
}

// settled waits for the bridge's own append to be folded, or catches up
// after a concurrent write.
func (b *Bridge) settled(ctx context.Context, agent string, ack events.Ack, err error) {
	switch {
	case errors.Is(err, events.ErrConcurrency):
		b.catchUp(ctx, agent)
	case err != nil:
		b.warnWrite("record turn progress", err, "agent", agent)
		sleep(ctx, b.cfg.Poll)
	default:
		b.waitApplied(ctx, agent, ack.Seq)
	}
}

// resolveCommand settles a typed command turn: it is submitted once the
// prompt box no longer holds it, and done (replied, with no reply text)
// once the agent is idle again with an empty box — and, for /clear and
// /compact by an agent with hooks, once its hooks report the session that
// command starts. The box is read with backoff, a few times per command.
// A command that leaves a dialog or menu up past SubmitTimeout (at most
// commandDialogWait) while the agent is idle (not working) fails, the
// dialog closed (recoverComposer).
func (b *Bridge) resolveCommand(ctx context.Context, agent, turn string) {
	start := b.cfg.Now()
	deadline := start.Add(b.cfg.SubmitTimeout)
	dialogAt := start.Add(min(b.cfg.SubmitTimeout, commandDialogWait))
	poll := b.cfg.Poll
	for f, now := range b.whileTyped(ctx, agent, turn) {
		t := f.turn
		if !f.up {
			wait(ctx, f.changed, b.cfg.Poll)
			continue
		}
		r, rerr := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: f.pane, Source: herdrapi.SourceVisible})
		c := f.kind.ParseComposer(r.Text)
		idle := !f.recognised || b.herdrReady(agent)
		var ack events.Ack
		var err error
		switch {
		case rerr == nil && c.Empty() && idle && commandDone(t.Command, f, now.Sub(start)):
			if _, err = b.append(ctx, agent, turn, events.AgentSubmitted{Via: "screen"}, guard(agent, f.lastSeq)); err == nil {
				ack, err = b.append(ctx, agent, turn, events.AgentReplied{})
			}
		case now.Sub(start) > b.cfg.CommandTimeout:
			ack, err = b.append(ctx, agent, turn, events.AgentFailed{Reason: events.ReasonIndeterminate,
				Message: fmt.Sprintf("the command did not complete within %s", b.cfg.CommandTimeout)}, guard(agent, f.lastSeq))
		case now.After(dialogAt) && rerr == nil && !c.Visible && idle && !b.busy(agent) && !f.kind.Working(r.Text):
			// A command that opened a dialog or menu (/help, a picker)
			// waits for a person's key: fleetd cannot answer it, and it
			// must not wedge the next turn. Close it, and say so.
			rec := b.recoverComposer(ctx, agent, f.pane, f.kind)
			if !rec.ok {
				b.attend(ctx, agent, AttentionScreen, rec.String())
			}
			if fresh, ok := b.inFlight(agent, turn); ok {
				f = fresh
			}
			ack, err = b.append(ctx, agent, turn, events.AgentFailed{Reason: events.ReasonIndeterminate,
				Message: "the command opened something that waits for a person's key; " + rec.String()}, guard(agent, f.lastSeq))
		case now.After(deadline) && t.Enter == 0 && rerr == nil && c.Visible && c.Text == t.Command:
			ack, err = b.append(ctx, agent, turn, events.AgentTyped{Pane: f.pane, Method: MethodEnter, Enter: 1}, guard(agent, f.lastSeq))
			if err == nil {
				b.client.SendKeys(ctx, f.pane, "enter")
			}
		default:
			wait(ctx, f.changed, poll)
			poll = min(2*poll, time.Second)
			continue
		}
		b.settled(ctx, agent, ack, err)
	}
}

// commandDialogWait bounds how long a command may keep the prompt box
// away while its agent is idle and shows no work before it is taken for
// a dialog or menu that waits for a person (/help, a picker). A host
// slow enough to raise SubmitTimeout is given up to this, not more: the
// answer is a failure either way, and the lead need not wait for it as
// long as for a submission's proof.
const commandDialogWait = 10 * time.Second

// commandDone reports whether what the agent showed since the command was
// typed completes it: /clear and /compact start a session (an agent with
// hooks reports it); another command that started a session (Pi's,
// Codex's and OpenCode's /new) is done once that session is reported;
// any other is done once its box stayed empty a moment with no work seen.
// The session is the sure sign: a /new may flash "working" in herdr for a
// moment, or not, as the screen was sampled, and a work flash alone would
// hold the turn until CommandTimeout.
func commandDone(command string, f inFlight, since time.Duration) bool {
	name := roles.CommandName(command)
	if f.hooked && (name == "/clear" || name == "/compact") {
		for _, s := range f.sessions {
			if "/"+s == name {
				return true
			}
		}
		return false
	}
	if f.hooked && len(f.sessions) > 0 {
		return true
	}
	return !f.working && since >= time.Second
}

// herdrReady reports whether herdr's latest view of the agent is idle or
// done.
func (b *Bridge) herdrReady(agent string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	return a != nil && a.fresh && a.status.Ready()
}

// settle ends a submitted turn whose reply is not coming, so it never
// blocks the agent's next turn: the agent is idle again and its Stop hook
// answered another prompt (after ReplyGrace for this turn's own reply to
// arrive late), or no Stop hook came at all (after IdleGrace).
func (b *Bridge) settle(ctx context.Context, agent string, t lifecycle.Turn) {
	f, ok := b.inFlight(agent, t.ID)
	if !ok || f.turn.State != lifecycle.StateSubmitted {
		return
	}
	if f.readySince.IsZero() {
		f.readySince = b.readyInView(agent)
	}
	if f.readySince.IsZero() {
		return
	}
	now := b.cfg.Now()
	// While the log refused writes the Stop hook spooled its reply: the
	// graces run from when it took writes again.
	refused := b.writes.lastRefused()
	var msg string
	switch {
	case f.turn.StrayReplies > 0 && now.Sub(later(later(f.readySince, f.strayAt), refused)) >= b.cfg.ReplyGrace:
		msg = "the agent finished, but its Stop hook answered another prompt; this turn's reply is not coming"
	case f.turn.StrayReplies == 0 && now.Sub(later(f.readySince, refused)) >= b.cfg.IdleGrace:
		msg = fmt.Sprintf("the agent has been idle for %s without a Stop hook for this prompt", b.cfg.IdleGrace)
	default:
		return
	}
	ack, err := b.append(ctx, agent, t.ID, events.AgentFailed{Reason: events.ReasonUnmatchedReply, Message: msg}, guard(agent, f.lastSeq))
	b.settled(ctx, agent, ack, err)
}

// readyInView starts the agent's ready time now when herdr's present view
// of it is ready, though no change of herdr's has said so since its ready
// time was last cleared: a hook's "working" replayed from the spool after
// herdr showed the agent idle (its Stop hook lost), or a typed event the
// fold reached after herdr's view was taken (a gateway starting on a long
// log). herdr tells changes only, so that view can stand for good, and the
// turn with the agent's queue behind it would wait for ever. An agent
// herdr does not recognise has no herdr view worth starting from.
func (b *Bridge) readyInView(agent string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	if a == nil {
		return time.Time{}
	}
	if a.readySince.IsZero() && a.fresh && a.recognised() && a.status.Ready() {
		a.readySince = b.cfg.Now()
	}
	return a.readySince
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
