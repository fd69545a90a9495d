package dashboard_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/simagent"
)

// An agent blocked on a permission dialog, answered from the dashboard in
// a real browser signed in with the token: the fleet view's row says
// what it asks and opens the agent view, which shows the dialog's title,
// question, command and numbered options as buttons and the agent's own
// screen with the dialog on it. Option 1 lets the turn reply, option 3
// (No) fails it denied; each time the dialog leaves the page live,
// without a reload. An answer to a dialog that is gone shows the shim's
// no_dialog.
func TestBrowserAnswersAPermissionDialog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herdr, sim agents and Chromium")
	}
	chromium(t) // skip before starting anything
	f := actionsFabric(t, 100*time.Millisecond, "w-sim-1")
	ctx := browser(t)
	base := "http://" + f.Gateway.HTTPAddr()

	load := func(t *testing.T, u string) {
		t.Helper()
		navigate(t, ctx, u)
		eval[bool](t, ctx, `(window.__sameDocument = true, true)`)
	}
	sameDocument := func(t *testing.T) {
		t.Helper()
		if !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Error("the page was reloaded")
		}
	}
	click := func(t *testing.T, sel string) {
		t.Helper()
		clickOn(t, ctx, sel)
	}
	// blocked sends text (with "[block]": the sim agent asks first) to
	// w-sim-1 as the lead, and returns the turn's id.
	blocked := func(t *testing.T, text string) string {
		t.Helper()
		acc, err := f.Client.SendAsync(in(t, ctx, 10*time.Second), leadshim.Message{To: "w-sim-1", From: "lead", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return acc.ID
	}

	ok := t.Run("sign in", func(t *testing.T) {
		navigate(t, ctx, base+"/")
		waitFor(t, ctx, "the sign-in form", `document.getElementById('login') !== null`)
		if err := chromedp.Do(in(t, ctx, 10*time.Second), chromedp.SetValue(chromedp.CSS("#token"), actionsToken)); err != nil {
			t.Fatal(err)
		}
		clickAndLoad(t, ctx, `#login button[type=submit]`)
		waitFor(t, ctx, "the fleet view with its actions", `document.body.dataset.actions === 'on' && document.getElementById('agent-w-sim-1') !== null`)
	})

	var yes string
	ok = ok && t.Run("the fleet view says what the agent asks", func(t *testing.T) {
		load(t, base+"/")
		yes = blocked(t, "may I [block]")
		waitFor(t, ctx, "w-sim-1 asks", `(a => a && a.textContent === 'asks: Do you want to proceed?')(document.querySelector('#agent-w-sim-1 a.asks'))`)
		sameDocument(t)
		clickAndLoad(t, ctx, `#agent-w-sim-1 a.asks`)
		waitFor(t, ctx, "the agent view's dialog", `document.getElementById('agent-dialog') !== null`)
	})

	ok = ok && t.Run("the agent view shows the dialog and the agent's screen", func(t *testing.T) {
		load(t, base+"/?view=agent&id=w-sim-1")
		waitFor(t, ctx, "the dialog", `document.getElementById('dialog-question') !== null`)
		got := eval[[]string](t, ctx, `[document.getElementById('dialog-title').textContent, document.getElementById('dialog-question').textContent,
			document.getElementById('dialog-detail').textContent].concat(Array.from(document.querySelectorAll('#dialog-options button.answer'), b => b.textContent))`)
		want := []string{"Bash command", "Do you want to proceed?", "run the simulated tool\nsimulated-tool --needs-permission",
			"1. Yes", "2. Yes, and don't ask again for simulated-tool commands in this project", "3. No"}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("the dialog reads\n%q\nwant\n%q", got, want)
		}
		waitFor(t, ctx, "the agent's screen with the dialog on it",
			`(p => p && p.textContent.includes('simulated-tool --needs-permission') && p.textContent.includes('Esc to cancel'))(document.getElementById('agent-screen'))`)
		if note := eval[string](t, ctx, `document.getElementById('screen-note').textContent`); !strings.HasPrefix(note, "pane ") {
			t.Errorf("the screen's note %q, want the pane it was read from", note)
		}
	})

	ok = ok && t.Run("option 1 answers it: the dialog goes, the turn replies", func(t *testing.T) {
		load(t, base+"/?view=agent&id=w-sim-1")
		waitFor(t, ctx, "the dialog's buttons", `document.querySelector('#dialog-options button[data-option="1"]') !== null`)
		click(t, `#dialog-options button[data-option="1"]`)
		waitFor(t, ctx, "the answer", `document.getElementById('action-result').dataset.code === 'answered'`)
		if got := eval[string](t, ctx, `document.getElementById('action-result').textContent`); got != "answered w-sim-1: 1. Yes" {
			t.Errorf("the page says %q", got)
		}
		waitFor(t, ctx, "the dialog gone and the turn replied", fmt.Sprintf(
			`document.getElementById('agent-dialog') === null && (e => e && e.dataset.state === 'replied')(document.querySelector('#conversation [data-turn=%q]'))`, yes))
		waitFor(t, ctx, "the agent's screen with the reply", fmt.Sprintf(`document.getElementById('agent-screen').textContent.includes(%q)`, "● "+simagent.DefaultReplyPrefix+"may I [block]"))
		sameDocument(t)
		if a, _ := f.Gateway.Views.Agent("w-sim-1"); a.Dialog != nil {
			t.Errorf("the roster still shows the dialog %+v", a.Dialog)
		}
	})

	ok = ok && t.Run("No fails the turn denied", func(t *testing.T) {
		load(t, base+"/?view=agent&id=w-sim-1")
		no := blocked(t, "and this? [block]")
		waitFor(t, ctx, "the dialog's No", `document.querySelector('#dialog-options button[data-option="3"]') !== null`)
		click(t, `#dialog-options button[data-option="3"]`)
		waitFor(t, ctx, "the dialog gone and the turn failed denied", fmt.Sprintf(
			`document.getElementById('agent-dialog') === null && (e => e && e.dataset.state === 'failed' && e.textContent.includes('denied'))(document.querySelector('#conversation [data-turn=%q]'))`, no))
		if got := eval[string](t, ctx, `document.getElementById('action-result').textContent`); got != "answered w-sim-1: 3. No" {
			t.Errorf("the page says %q", got)
		}
		sameDocument(t)
	})

	_ = ok && t.Run("an answer to a dialog that is gone shows why", func(t *testing.T) {
		load(t, base+"/?view=agent&id=w-sim-1")
		waitFor(t, ctx, "the agent idle", `document.getElementById('agent-head').dataset.state === 'idle'`)
		// The page of a moment ago, still showing the dialog answered
		// since: out of the view, which a live re-rendering replaces.
		eval[bool](t, ctx, `(document.body.insertAdjacentHTML('beforeend',
			'<section class="dialog" id="stale"><button type="button" class="act answer" data-action="answer" data-agent="w-sim-1" data-option="1" data-label="Yes">1. Yes</button></section>'), true)`)
		click(t, `#stale button.answer`)
		waitFor(t, ctx, "the shim's no_dialog", `document.getElementById('action-result').dataset.code === 'no_dialog'`)
		if !eval[bool](t, ctx, `(b => !b || !b.disabled)(document.querySelector('#stale button.answer'))`) {
			t.Error("the answer buttons stayed disabled after the error")
		}
	})
}
