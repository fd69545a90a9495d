package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/simagent"
)

// actionsToken is the shim's token in the actions test: the browser signs
// in with it, and acts with the sign-in's CSRF token.
const actionsToken = "actions-token-0123456789abcdef"

// actionsFabric starts a fabric whose shim wants a token, with sim agents
// of role w-sim (the lead's role may spawn them) that work think per
// turn, and waits until they are ready.
func actionsFabric(t *testing.T, think time.Duration, names ...string) *demo.Fabric {
	t.Helper()
	bin := fleetd(t)
	ctx := in(t, t.Context(), 90*time.Second)
	f, err := demo.StartFabric(ctx, demo.FabricConfig{Dir: t.TempDir(), Host: "browser", Version: "test", Token: actionsToken,
		Roles: func(api *fakeapi.Server) (roles.Config, error) {
			cfg := roles.Config{Roles: map[string]roles.Role{
				"lead": {EnvClass: roles.EnvClean, Tier: 0, MaySpawn: []string{"w-sim"}},
				"w-sim": {EnvClass: roles.EnvClean, Tier: 2, Env: map[string]string{"HERDR_AGENT": "claude"},
					Command: []string{bin, "sim-agent", "--think", think.String(), "--model", "sim-w-sim"}},
			}}
			return cfg, cfg.Validate()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	specs := make([]demo.AgentSpec, len(names))
	for i, n := range names {
		specs[i] = demo.AgentSpec{Role: "w-sim", Name: n, Cwd: t.TempDir()}
	}
	if err := f.Spawn(ctx, specs); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitReady(ctx, names); err != nil {
		t.Fatal(err)
	}
	return f
}

// The dashboard's actions, clicked in a real browser signed in with the
// token, each seen live on the page without a reload: a send shows its
// turn and then its reply; a spawn shows the new agent, then idle; a
// cancel fails a queued turn cancelled, and a re-send queues it anew; a
// restart brings an agent back idle (its turn in flight failed, the one
// sent to it by name taken in the new pane); a stop leaves its agent
// exited. Each
// names the page's identity in the log. A POST the page makes without its
// CSRF token — what a forged form amounts to — is refused 403 and does
// nothing.
func TestBrowserActionsFromTheDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herdr, sim agents and Chromium")
	}
	chromium(t) // skip before starting anything
	f := actionsFabric(t, 100*time.Millisecond, "w-sim-1", "w-sim-2")
	ctx := browser(t)
	base := "http://" + f.Gateway.HTTPAddr()

	// load opens a page, and marks it: a mark still there later means the
	// page was not reloaded. Stops and restarts ask to confirm: yes.
	load := func(t *testing.T, u string) {
		t.Helper()
		navigate(t, ctx, u)
		eval[bool](t, ctx, `(window.__sameDocument = true, window.confirm = () => true, true)`)
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
	fill := func(t *testing.T, sel, value string) {
		t.Helper()
		if err := chromedp.Do(in(t, ctx, 10*time.Second), chromedp.SetValue(chromedp.CSS(sel), value)); err != nil {
			t.Fatalf("fill %s: %v", sel, err)
		}
	}

	ok := t.Run("sign in", func(t *testing.T) {
		navigate(t, ctx, base+"/")
		waitFor(t, ctx, "the sign-in form", `document.getElementById('login') !== null`)
		fill(t, "#token", actionsToken)
		clickAndLoad(t, ctx, `#login button[type=submit]`)
		waitFor(t, ctx, "the fleet view with its actions",
			`document.body.dataset.actions === 'on' && document.getElementById('send-form') !== null && document.getElementById('agent-w-sim-1') !== null`)
	})

	ok = ok && t.Run("a send shows its turn, then its reply", func(t *testing.T) {
		load(t, base+"/")
		fill(t, "#send-to", "w-sim-1")
		fill(t, "#send-text", "hello from the page")
		click(t, "#send-go")
		waitFor(t, ctx, "the turn replied in place",
			`(h => h && h.dataset.state === 'replied')(document.getElementById('turn-head')) && location.search.includes('view=turn')`)
		if got := eval[string](t, ctx, `document.getElementById('turn-reply').textContent`); got != simagent.DefaultReplyPrefix+"hello from the page" {
			t.Errorf("reply %q", got)
		}
		if got := eval[string](t, ctx, `document.getElementById('turn-from').textContent`); got != "dashboard" {
			t.Errorf("sent by %q, want dashboard", got)
		}
		sameDocument(t)
	})

	ok = ok && t.Run("a spawn shows the new agent, then idle", func(t *testing.T) {
		load(t, base+"/")
		fill(t, "#spawn-role", "w-sim")
		fill(t, "#spawn-name", "w-sim-9")
		fill(t, "#spawn-as", "lead")
		click(t, "#spawn-go")
		waitFor(t, ctx, "w-sim-9 listed idle", `(r => r && r.dataset.state === 'idle')(document.getElementById('agent-w-sim-9'))`)
		waitFor(t, ctx, "the spawn's answer", `document.getElementById('action-result').dataset.code === 'spawned'`)
		sameDocument(t)
		if a, ok := f.Gateway.Views.Agent("w-sim-9"); !ok || a.Parent != "dashboard" || a.Role != "w-sim" {
			t.Errorf("the spawned agent: %+v", a)
		}
	})

	// The turn before the cancelled one keeps w-sim-2 busy long enough
	// for any machine; the restart below ends it.
	var busy, resent string
	ok = ok && t.Run("a cancel fails a queued turn, and a re-send queues it anew", func(t *testing.T) {
		acc, err := f.Client.SendAsync(in(t, ctx, 10*time.Second), leadshim.Message{To: "w-sim-2", From: "lead", Text: "keep busy [delay=60s]"})
		if err != nil {
			t.Fatal(err)
		}
		busy = acc.ID
		queued, err := f.Client.SendAsync(in(t, ctx, 10*time.Second), leadshim.Message{To: "w-sim-2", From: "lead", Text: "waits its turn"})
		if err != nil {
			t.Fatal(err)
		}
		load(t, base+"/?view=turn&id="+queued.ID)
		waitFor(t, ctx, "the queued turn's cancel button", `document.getElementById('turn-cancel') !== null`)
		click(t, "#turn-cancel")
		waitFor(t, ctx, "the turn failed cancelled",
			`document.getElementById('turn-head').dataset.state === 'failed' && document.getElementById('view').textContent.includes('cancelled: cancelled by dashboard')`)
		steps := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#timeline [data-step]'), s => s.dataset.step)`)
		if got, want := strings.Join(steps, " "), "queued failed"; got != want {
			t.Errorf("steps %q, want %q", got, want)
		}
		click(t, "#turn-resend")
		waitFor(t, ctx, "the re-sent turn shown in place", fmt.Sprintf(
			`(h => h && h.dataset.turn !== %q && h.dataset.state === 'queued')(document.getElementById('turn-head'))`, queued.ID))
		resent = eval[string](t, ctx, `document.getElementById('turn-head').dataset.turn`)
		if got := eval[string](t, ctx, `document.getElementById('turn-text').textContent + ' from ' + document.getElementById('turn-from').textContent`); got != "waits its turn from dashboard" {
			t.Errorf("the re-sent turn: %q", got)
		}
		sameDocument(t)
	})

	ok = ok && t.Run("a restart brings the agent back idle, the turn sent to it by name taken", func(t *testing.T) {
		load(t, base+"/")
		before, _ := f.Gateway.Views.Agent("w-sim-2")
		click(t, `button[data-action="restart"][data-agent="w-sim-2"]`)
		waitFor(t, ctx, "the restart's answer", `document.getElementById('action-result').dataset.code === 'restarted'`)
		waitFor(t, ctx, "w-sim-2 idle again", `(r => r && r.dataset.state === 'idle')(document.getElementById('agent-w-sim-2'))`)
		sameDocument(t)
		if after, _ := f.Gateway.Views.Agent("w-sim-2"); after.Pane == before.Pane {
			t.Errorf("w-sim-2 still in pane %s", after.Pane)
		}
		if env, err := f.Client.Turn(in(t, ctx, 10*time.Second), busy, ""); err != nil || env.Reason != "agent_died" {
			t.Errorf("the turn it was working on: %+v %v, want failed agent_died", env, err)
		}
		if env, err := f.Client.Turn(in(t, ctx, 70*time.Second), resent, "60s"); err != nil || env.Status != "replied" || env.Reply != simagent.DefaultReplyPrefix+"waits its turn" {
			t.Errorf("the re-sent turn: %+v %v, want replied in the new pane", env, err)
		}
	})

	ok = ok && t.Run("a stop leaves the agent exited", func(t *testing.T) {
		load(t, base+"/")
		click(t, `button[data-action="stop"][data-agent="w-sim-9"]`)
		waitFor(t, ctx, "w-sim-9 gone", `(r => !r || r.dataset.state === 'exited')(document.getElementById('agent-w-sim-9'))`)
		waitFor(t, ctx, "the stop's answer", `document.getElementById('action-result').dataset.code === 'stopped'`)
		sameDocument(t)
	})

	ok = ok && t.Run("the log and the agent view name who acted", func(t *testing.T) {
		load(t, base+"/?view=log&subject=fleet.agent.w-sim-9.exited")
		waitFor(t, ctx, "the stop in the log", `document.getElementById('log-rows').textContent.includes('stopped by dashboard')`)
		load(t, base+"/?view=log&subject=fleet.agent.w-sim-2.restart")
		waitFor(t, ctx, "the restart in the log", `document.getElementById('log-rows').textContent.includes('restarted by dashboard')`)
		load(t, base+"/?view=agent&id=w-sim-2")
		waitFor(t, ctx, "the restart in the agent's lifecycle",
			`document.getElementById('agent-lifecycle').textContent.includes('restart restarted (restarted by dashboard) in pane')`)
		load(t, base+"/?view=agent&id=w-sim-9")
		waitFor(t, ctx, "the stop in the agent's lifecycle", `document.getElementById('agent-lifecycle').textContent.includes('pane exited stopped by dashboard')`)
	})

	_ = ok && t.Run("a POST without the page's CSRF token is refused", func(t *testing.T) {
		load(t, base+"/")
		// A dozen pages were left on the way here: none holds its stream
		// open (from the back/forward cache, they took the six
		// connections a browser gives a host, and a page could not load).
		checkfor.Eventually(t, 10*time.Second, 25*time.Millisecond, func() error {
			if n := f.Gateway.Dashboard.Stats().Streams; n != 1 {
				return fmt.Errorf("%d dashboard streams open, want the page's one", n)
			}
			return nil
		})
		statuses, err := chromedp.Run(in(t, ctx, 10*time.Second), chromedp.Evaluate[[]int](`Promise.all([
			fetch('/agents/w-sim-1/stop', {method: 'POST', body: '{"from":"mallory"}'}),
			fetch('/agents/w-sim-1/stop', {method: 'POST', body: '{"from":"mallory"}', headers: {'X-Fleetd-Csrf': 'forged'}}),
			fetch('/message', {method: 'POST', body: '{"to":"w-sim-1","text":"forged"}'})
		]).then(rs => rs.map(r => r.status))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(statuses) != fmt.Sprint([]int{http.StatusForbidden, http.StatusForbidden, http.StatusForbidden}) {
			t.Errorf("forged POSTs answered %v, want 403 each", statuses)
		}
		if a, ok := f.Gateway.Views.Agent("w-sim-1"); !ok || a.Exited {
			t.Errorf("w-sim-1 after the forged stop: %+v", a)
		}
		if forged := f.Gateway.Views.Turns(func(tu lifecycle.Turn) bool { return tu.Text == "forged" }); len(forged) > 0 {
			t.Errorf("a forged send was queued: %+v", forged)
		}
	})
}
