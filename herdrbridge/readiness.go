package herdrbridge

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// Attention reasons the gateway records (events.AgentAttention): it types
// nothing into the agent until the reason is gone.
const (
	AttentionShell        = "shell"
	AttentionComposerText = "composer_not_empty"
	AttentionBashMode     = "composer_bash_mode"
	AttentionNoPromptBox  = "no_prompt_box"
	AttentionPartial      = "partial_prompt"
)

// ready decides, right before typing, whether the agent can take a prompt
// now. herdr's view comes from its events (agent.get only when this
// connection has not shown the pane yet); the pane's foreground process
// from /proc where it can be read; the prompt box from one pane.read of
// the visible screen. A "no" that needs a person is recorded as
// attention, and the agent is looked at again with backoff.
func (b *Bridge) ready(ctx context.Context, agent string, tg *target) bool {
	if !tg.freshView {
		if err := b.peek(ctx, tg.pane); err != nil {
			b.backoff(agent)
			return false
		}
		fresh, ok := b.snapshot(agent)
		if !ok || !fresh.freshView {
			return false
		}
		*tg = fresh
	}
	hold := tg.statuses.Hold()
	if hold == HeldHerdrBehind {
		// Ask herdr now rather than wait for its event.
		if err := b.peek(ctx, tg.pane); err == nil {
			if fresh, ok := b.snapshot(agent); ok {
				*tg = fresh
			}
		}
		if !tg.status.Ready() {
			b.backoffFrom(agent, 20*time.Millisecond)
			return false
		}
		hold = tg.statuses.Hold()
	}
	if hold != "" {
		// herdr's next event, or the hooks', wakes us.
		return false
	}
	if shell, known := b.roots.showsShell(b.cfg.ProcRoot, b.client.Path(), tg.pane); known && shell {
		b.checkDied(ctx, agent)
		b.mu.Lock()
		dead := b.agents[agent].sessionEnded()
		b.mu.Unlock()
		if !dead {
			// A dead agent's end is recorded (and its role may restart
			// it): attention would only outlive the pane it was about.
			b.attend(ctx, agent, AttentionShell, "the pane's foreground is its shell, not the agent: nothing is typed into a shell")
		}
		b.backoff(agent)
		return false
	}
	r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: tg.pane, Source: herdrapi.SourceVisible})
	if err != nil {
		b.log.Warn("read the pane before typing", "agent", agent, "pane", tg.pane, "err", err)
		b.backoff(agent)
		return false
	}
	c := tg.kind.ParseComposer(r.Text)
	verdict := ScreenReadiness(tg.kind, r.Text)
	look := b.look(agent, verdict)
	switch look.Attention {
	case AttentionBashMode:
		b.attend(ctx, agent, AttentionBashMode, "the prompt box is in bash mode: what is typed would run in a shell")
	case AttentionComposerText:
		b.attend(ctx, agent, AttentionComposerText, "the prompt box holds text nobody submitted: "+clip(c.Text, 120))
	case AttentionNoPromptBox:
		// No prompt box yet (Claude Code is starting) or a dialog covers
		// it, and that has lasted.
		b.attend(ctx, agent, AttentionNoPromptBox, "the agent is idle but its prompt box is not on screen (a dialog or overlay is open?): "+clip(lastRows(r.Text, 3), 160))
	}
	switch {
	case look.Type:
	case look.Soon:
		// A turn not over though herdr and the hooks say idle (Claude
		// Code runs its Stop hook inside the turn: the title's spinner
		// stopped, "esc to interrupt" still shown, and a prompt submitted
		// then is queued under the finished prompt's id), or a prompt box
		// not drawn yet: look again soon.
		b.backoffFrom(agent, 20*time.Millisecond)
		return false
	default:
		b.backoff(agent)
		return false
	}
	if tg.attention != "" {
		b.attend(ctx, agent, "", "")
	}
	return true
}

// What one look at an agent's screen says of typing into it now
// (ScreenReadiness), besides the attention reasons AttentionBashMode,
// AttentionComposerText and AttentionNoPromptBox.
const (
	ScreenReady   = "ready"
	ScreenWorking = "working"
)

// ScreenReadiness is the screen's part of the decision to type: what the
// kind reads on screen, in the order ready weighs it (a turn at work
// first, then the composer). It is a function of the screen alone so that
// recorded screens replay through the very decision the bridge takes
// (package recording).
func ScreenReadiness(k Kind, screen string) string {
	c := k.ParseComposer(screen)
	switch {
	case k.Working(screen):
		return ScreenWorking
	case c.Empty():
		return ScreenReady
	case c.Visible && c.Bash:
		return AttentionBashMode
	case c.Visible:
		return AttentionComposerText
	}
	return AttentionNoPromptBox
}

// look takes one look's verdict through Settle with the agent's memory
// of looks without a prompt box, and keeps what it says for the next;
// a look that says type starts the agent's backoff afresh.
func (b *Bridge) look(agent, verdict string) Look {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.agents[agent]
	if a == nil {
		return Settle(verdict, time.Time{}, b.cfg.Now(), b.cfg.AttentionAfter)
	}
	l := Settle(verdict, a.noBoxSince, b.cfg.Now(), b.cfg.AttentionAfter)
	a.noBoxSince = l.NoBoxSince
	if l.Type {
		a.resetBackoff()
	}
	return l
}

// attend records that the agent needs attention for reason (or, with "",
// that it no longer does), once per change.
func (b *Bridge) attend(ctx context.Context, agent, reason, detail string) {
	b.mu.Lock()
	a := b.agents[agent]
	if a == nil || a.attention == reason {
		b.mu.Unlock()
		return
	}
	a.attention = reason
	b.mu.Unlock()
	if reason != "" {
		b.log.Warn("agent needs attention", "agent", agent, "reason", reason, "detail", detail)
	}
	if _, err := b.append(ctx, agent, "", events.AgentAttention{Reason: reason, Detail: detail}); err != nil {
		b.warnWrite("record attention", err, "agent", agent)
	}
}

// clip shortens s to n runes for a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// lastRows is the last n non-blank rows of a screen.
func lastRows(screen string, n int) string {
	var out []string
	rows := strings.Split(screen, "\n")
	for i := len(rows) - 1; i >= 0 && len(out) < n; i-- {
		if r := strings.TrimSpace(rows[i]); r != "" {
			out = append([]string{r}, out...)
		}
	}
	return strings.Join(out, " / ")
}
