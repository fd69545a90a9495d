package herdrbridge

import (
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// The bridge's time-dependent typing decisions, as functions of what was
// seen and of the time given: the bridge calls them with its clock
// (BridgeConfig.Now), package recording with a recording's own times, so
// that a replay takes the very decisions the bridge took, at the same
// moments, on a fake clock.

// Defaults of BridgeConfig's timings that a recording's replay decides
// with: the recordings are made with them.
const (
	// DefaultEnterDelay is BridgeConfig.EnterDelay's default and minimum.
	DefaultEnterDelay = 300 * time.Millisecond
	// DefaultAttentionAfter is BridgeConfig.AttentionAfter's default.
	DefaultAttentionAfter = 10 * time.Second
)

// Statuses is what herdr and the agent's hooks have said of an agent:
// the status half of the decision to type (Settle weighs the screen).
type Statuses struct {
	// Labelled: herdr names an agent in the pane. Refused: herdr refused
	// agent.prompt for it (it is not the pane's foreground process).
	Labelled, Refused bool
	// Herdr is herdr's status of the pane's agent.
	Herdr herdrapi.AgentStatus
	// Hooked: the agent's hooks reported its session; Hook is their
	// last status.
	Hooked bool
	Hook   events.Status
	// LazySession: the kind starts its session (and its hooks) only
	// with the first prompt.
	LazySession bool
}

// Recognised reports whether herdr's word about the agent counts and it
// is typed into with agent.prompt: herdr names an agent in its pane and
// has not refused agent.prompt for it — unless the agent has no hooks,
// which leave no other way to know it is idle.
func (s Statuses) Recognised() bool { return s.Labelled && (!s.Refused || !s.Hooked) }

// Why the statuses hold typing back (Statuses.Hold).
const (
	// HeldHerdrBehind: the hooks say the turn is over, herdr does not
	// yet: its screen detection confirms idle only after a few checks,
	// and its event comes up to a poll later still. Ask herdr now.
	HeldHerdrBehind = "herdr_behind"
	// HeldByHerdr: herdr, whose word counts, says working, blocked or
	// unknown; its next event says when that ends.
	HeldByHerdr = "herdr_busy"
	// HeldByHooks: herdr does not recognise the agent, and its hooks say
	// it works.
	HeldByHooks = "hooks_busy"
	// HeldNoWord: herdr does not recognise the agent and it has no
	// hooks: nothing can say it is idle.
	HeldNoWord = "no_word"
)

// Hold says why the statuses hold typing back, "" when they let the
// agent be typed into (the screen decides then, Settle). A kind whose
// session starts with the first prompt has no hooks before it: its empty
// composer on screen is the sign.
func (s Statuses) Hold() string {
	recognised := s.Recognised()
	switch {
	case recognised && !s.Herdr.Ready() && s.Hooked && s.Hook.Ready():
		return HeldHerdrBehind
	case recognised && !s.Herdr.Ready():
		return HeldByHerdr
	case !recognised && s.Hooked && !s.Hook.Ready():
		return HeldByHooks
	case !recognised && !s.Hooked && !s.LazySession:
		return HeldNoWord
	}
	return ""
}

// Look is what one look at the screen of an agent whose statuses say
// idle decides (Settle): type now, call for a person, or look again.
type Look struct {
	// Type: the agent is settled, its prompt box empty: type now.
	Type bool
	// Attention is the reason to call for a person now ("" for none).
	Attention string
	// Soon: look again soon, not after the usual backoff: the screen is
	// about to change (a turn ending, a prompt box being drawn).
	Soon bool
	// NoBoxSince is since when the agent has been seen without its prompt
	// box, carried to the next look (zero once the agent was typed into).
	NoBoxSince time.Time
}

// Settle decides on one look at an idle agent's screen at now, given what
// the look says (ScreenReadiness) and since when earlier looks have seen
// no prompt box (noBoxSince, zero for not). A prompt box that is not on
// screen calls for attention only once it has stayed away attentionAfter:
// a CLI draws its box a moment after it goes idle, and a dialog a person
// opens and closes again needs no one; a box in bash mode or holding a
// draft calls for it at once, since only a person clears it. A turn still
// at work behind an idle status is looked at again soon.
func Settle(verdict string, noBoxSince, now time.Time, attentionAfter time.Duration) Look {
	switch verdict {
	case ScreenReady:
		return Look{Type: true}
	case ScreenWorking:
		return Look{Soon: true, NoBoxSince: noBoxSince}
	case AttentionBashMode, AttentionComposerText:
		return Look{Attention: verdict, NoBoxSince: noBoxSince}
	}
	if noBoxSince.IsZero() {
		noBoxSince = now
	}
	l := Look{Soon: true, NoBoxSince: noBoxSince}
	if now.Sub(noBoxSince) >= attentionAfter {
		l.Attention = AttentionNoPromptBox
	}
	return l
}

// What EnterAfter says of pressing Enter after a typed text; all but
// EnterNotYet are also the labels of the EnterWait metric.
const (
	// EnterNotYet: not yet; look at the composer again.
	EnterNotYet = "wait"
	// EnterLanded: the composer shows the whole text.
	EnterLanded = "landed"
	// EnterPause: the screen cannot tell, and the fixed pause has passed.
	EnterPause = "pause"
	// EnterTimeout: the composer still shows none or part of the text
	// after LandTimeout; Enter goes anyway (resolve presses it once more
	// if the text stays).
	EnterTimeout = "timeout"
	// EnterShell: the composer is in its shell mode; Enter must never go
	// (ErrShellMode).
	EnterShell = "shell"
)

// EnterAfter decides, waited after a text was typed into an empty
// composer, whether Enter may go, given what the latest look at the
// composer says of the text (Landed; LandingUnknown for a kind that
// cannot tell, which leaves the fixed pause). Enter too early joins the
// paste as a newline and the prompt stays unsubmitted.
func EnterAfter(state Landing, waited, pause time.Duration) string {
	switch {
	case state == LandingShell:
		return EnterShell
	case state == LandingDone:
		return EnterLanded
	case state == LandingUnknown && waited >= pause:
		return EnterPause
	case waited >= LandTimeout:
		return EnterTimeout
	}
	return EnterNotYet
}
