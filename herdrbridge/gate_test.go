package herdrbridge_test

import (
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge"
)

// Settle, on a fake clock: a box that stays off screen calls for a person
// only once it has been missing AttentionAfter since the first look that
// missed it; a draft or bash mode at once; a ready look types and forgets
// the missing box; a turn at work is looked at again soon.
func TestSettleCallsForAttentionOnlyOnceTheBoxStayedAway(t *testing.T) {
	t0 := time.Unix(1000, 0)
	after := 10 * time.Second
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	since := time.Time{}
	for _, step := range []struct {
		at      time.Duration
		verdict string
		want    herdrbridge.Look
	}{
		{0, herdrbridge.AttentionNoPromptBox, herdrbridge.Look{Soon: true, NoBoxSince: at(0)}},
		{9999 * time.Millisecond, herdrbridge.AttentionNoPromptBox, herdrbridge.Look{Soon: true, NoBoxSince: at(0)}},
		{10 * time.Second, herdrbridge.AttentionNoPromptBox, herdrbridge.Look{Soon: true, Attention: herdrbridge.AttentionNoPromptBox, NoBoxSince: at(0)}},
		// The box back with a draft in it: a person's at once, and the
		// missing box is remembered.
		{11 * time.Second, herdrbridge.AttentionComposerText, herdrbridge.Look{Attention: herdrbridge.AttentionComposerText, NoBoxSince: at(0)}},
		{12 * time.Second, herdrbridge.ScreenWorking, herdrbridge.Look{Soon: true, NoBoxSince: at(0)}},
		{13 * time.Second, herdrbridge.ScreenReady, herdrbridge.Look{Type: true}},
		// After a typing, a missing box counts from its own first look.
		{14 * time.Second, herdrbridge.AttentionNoPromptBox, herdrbridge.Look{Soon: true, NoBoxSince: at(14 * time.Second)}},
		{23 * time.Second, herdrbridge.AttentionNoPromptBox, herdrbridge.Look{Soon: true, NoBoxSince: at(14 * time.Second)}},
		{24 * time.Second, herdrbridge.AttentionBashMode, herdrbridge.Look{Attention: herdrbridge.AttentionBashMode, NoBoxSince: at(14 * time.Second)}},
	} {
		got := herdrbridge.Settle(step.verdict, since, at(step.at), after)
		if got != step.want {
			t.Errorf("at %s, %s: got %+v, want %+v", step.at, step.verdict, got, step.want)
		}
		since = got.NoBoxSince
	}
}

// EnterAfter: Enter goes once the text shows whole, or after the pause
// while the screen cannot tell, or at LandTimeout while it shows part of
// the text; never in shell mode.
func TestEnterAfterWaitsForTheTextThePauseOrTheTimeout(t *testing.T) {
	pause := herdrbridge.DefaultEnterDelay
	for _, c := range []struct {
		name   string
		state  herdrbridge.Landing
		waited time.Duration
		want   string
	}{
		{"landed at once", herdrbridge.LandingDone, 0, herdrbridge.EnterLanded},
		{"pending before the pause", herdrbridge.LandingPending, pause - time.Millisecond, herdrbridge.EnterNotYet},
		{"pending after the pause", herdrbridge.LandingPending, pause, herdrbridge.EnterNotYet},
		{"pending at the timeout", herdrbridge.LandingPending, herdrbridge.LandTimeout, herdrbridge.EnterTimeout},
		{"unknown before the pause", herdrbridge.LandingUnknown, pause - time.Millisecond, herdrbridge.EnterNotYet},
		{"unknown at the pause", herdrbridge.LandingUnknown, pause, herdrbridge.EnterPause},
		{"shell at once", herdrbridge.LandingShell, 0, herdrbridge.EnterShell},
		{"shell after the timeout", herdrbridge.LandingShell, herdrbridge.LandTimeout, herdrbridge.EnterShell},
	} {
		if got := herdrbridge.EnterAfter(c.state, c.waited, pause); got != c.want {
			t.Errorf("%s: %s after %s: got %s, want %s", c.name, c.state, c.waited, got, c.want)
		}
	}
}

// Hold: herdr's word counts for an agent it recognises, the hooks' for
// one it does not; an agent with neither waits, unless its kind starts
// its hooks with the first prompt; hooks that say idle before herdr does
// send the bridge to ask herdr.
func TestHoldTakesTheWordOfWhoeverCanSayTheAgentIsIdle(t *testing.T) {
	for _, c := range []struct {
		name string
		s    herdrbridge.Statuses
		want string
	}{
		{"herdr recognises it, idle", herdrbridge.Statuses{Labelled: true, Herdr: "idle", Hooked: true, Hook: "working"}, ""},
		{"herdr recognises it, done", herdrbridge.Statuses{Labelled: true, Herdr: "done"}, ""},
		{"herdr recognises it, working", herdrbridge.Statuses{Labelled: true, Herdr: "working", Hooked: true, Hook: "working"}, herdrbridge.HeldByHerdr},
		{"herdr recognises it, blocked, no hooks", herdrbridge.Statuses{Labelled: true, Herdr: "blocked"}, herdrbridge.HeldByHerdr},
		{"the hooks say idle before herdr", herdrbridge.Statuses{Labelled: true, Herdr: "working", Hooked: true, Hook: "idle"}, herdrbridge.HeldHerdrBehind},
		{"herdr refused agent.prompt: the hooks say idle", herdrbridge.Statuses{Labelled: true, Refused: true, Herdr: "working", Hooked: true, Hook: "idle"}, ""},
		{"herdr refused agent.prompt: the hooks say working", herdrbridge.Statuses{Labelled: true, Refused: true, Herdr: "idle", Hooked: true, Hook: "working"}, herdrbridge.HeldByHooks},
		{"herdr refused agent.prompt, no hooks: herdr's word", herdrbridge.Statuses{Labelled: true, Refused: true, Herdr: "working"}, herdrbridge.HeldByHerdr},
		{"not recognised, hooks idle", herdrbridge.Statuses{Hooked: true, Hook: "idle"}, ""},
		{"not recognised, no hooks", herdrbridge.Statuses{}, herdrbridge.HeldNoWord},
		{"not recognised, no hooks before the first prompt", herdrbridge.Statuses{LazySession: true}, ""},
	} {
		if got := c.s.Hold(); got != c.want {
			t.Errorf("%s: Hold() = %q, want %q", c.name, got, c.want)
		}
	}
}
