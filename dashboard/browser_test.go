package dashboard_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/simagent"
)

// The browser tests drive a real headless Chromium against the dashboard
// of a running fabric. They skip without Chromium, unless CI is set: then
// its absence fails them (.ci/run installs it).

var (
	fleetdOnce sync.Once
	fleetdBin  string
	fleetdErr  error
	fleetdDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fleetdDir != "" {
		os.RemoveAll(fleetdDir)
	}
	os.Exit(code)
}

// fleetd builds the fleetd binary once, for the sim agents' panes (they
// run `fleetd sim-agent`, which fires `fleetd hook`).
func fleetd(t *testing.T) string {
	t.Helper()
	fleetdOnce.Do(func() {
		if fleetdDir, fleetdErr = os.MkdirTemp("", "fleetd-bin-"); fleetdErr != nil {
			return
		}
		fleetdBin = filepath.Join(fleetdDir, "fleetd")
		if out, err := exec.Command("go", "build", "-o", fleetdBin, "../cmd/fleetd").CombinedOutput(); err != nil {
			fleetdErr = fmt.Errorf("build fleetd: %v\n%s", err, out)
		}
	})
	if fleetdErr != nil {
		t.Fatal(fleetdErr)
	}
	return fleetdBin
}

// chromium finds the browser: $FLEET_CHROMIUM, else chromium or Chrome on
// PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLEET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI is set and there is no Chromium on PATH: .ci/run installs the Debian package chromium")
	}
	t.Skip("no Chromium on PATH (apt-get install chromium, or set FLEET_CHROMIUM); CI runs these tests")
	return ""
}

// browser starts a headless Chromium for the test, in UTC, and returns a
// tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // root in a container
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 900),
		chromedp.Env("TZ=UTC"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser and binds it to its context: it
	// must be the tab's own, or the end of a derived one's deadline would
	// close the browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// in bounds one browser step.
func in(t *testing.T, ctx context.Context, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return c
}

// waitFor polls a JavaScript predicate in the page until it holds.
func waitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if err := chromedp.Do(in(t, ctx, 30*time.Second), chromedp.Poll[chromedp.Void](js,
		chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second))); err != nil {
		html, _ := chromedp.Run(in(t, ctx, 5*time.Second), chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`))
		t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, js, err, html)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(in(t, ctx, 10*time.Second), chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// navigate loads a page and waits for it.
func navigate(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	if err := chromedp.Do(in(t, ctx, 20*time.Second), chromedp.Navigate(u)); err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
}

// clickOn clicks the element sel finds, on the page in place. The live
// views redraw their rows as events come: a node found may be replaced
// before the click reaches it ("Could not find node with given id"), and
// is then looked for again. Nothing was clicked in that case: the node's
// box is read before the mouse moves.
func clickOn(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		if err = chromedp.Do(in(t, ctx, 10*time.Second), chromedp.Click(chromedp.CSS(sel))); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// clickAndLoad clicks a link or button that loads a new page and waits
// for it.
func clickAndLoad(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if _, err := chromedp.RunResponse(in(t, ctx, 20*time.Second), chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// simFabric starts a whole fabric — built-in herdr with real PTY panes,
// a gateway serving the dashboard — with sim agents that work think per
// turn, and waits until they are ready.
func simFabric(t *testing.T, think time.Duration, agents ...demo.AgentSpec) *demo.Fabric {
	t.Helper()
	bin := fleetd(t)
	ctx := in(t, context.Background(), 90*time.Second)
	f, err := demo.StartFabric(ctx, demo.FabricConfig{Dir: t.TempDir(), Host: "browser", Version: "test",
		Roles: func(api *fakeapi.Server) (roles.Config, error) {
			cfg := roles.Config{Roles: map[string]roles.Role{}}
			for _, a := range agents {
				cfg.Roles[a.Role] = roles.Role{EnvClass: roles.EnvClean, Tier: 2, Env: map[string]string{"HERDR_AGENT": "claude"},
					Command: []string{bin, "sim-agent", "--think", think.String(), "--model", "sim-" + a.Role}}
			}
			return cfg, cfg.Validate()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	names := make([]string, len(agents))
	for i := range agents {
		agents[i].Cwd = t.TempDir()
		names[i] = agents[i].Name
	}
	if err := f.Spawn(ctx, agents); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitReady(ctx, names); err != nil {
		t.Fatal(err)
	}
	return f
}

// The dashboard of a running fabric, in a real browser: the fleet view
// lists the agents; a turn makes its agent show working, then idle,
// without a reload; the turn's timeline shows every step; a time before
// the turn shows it absent and "back to live" brings it back; the cost
// view's totals are what the hooks recorded.
func TestBrowserDashboardOfARunningFabric(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herdr, sim agents and Chromium")
	}
	ctx := browser(t)
	f := simFabric(t, 100*time.Millisecond,
		demo.AgentSpec{Role: "w-sim", Name: "w-sim-1"}, demo.AgentSpec{Role: "w-sim", Name: "w-sim-2"},
		demo.AgentSpec{Role: "w-other", Name: "w-other-1"})
	base := "http://" + f.Gateway.HTTPAddr()
	var turns []string

	ok := t.Run("the fleet view lists the agents", func(t *testing.T) {
		navigate(t, ctx, base+"/")
		waitFor(t, ctx, "three idle agents in two roles",
			`['w-sim-1','w-sim-2','w-other-1'].every(a => { const r = document.getElementById('agent-'+a); return r && r.dataset.state === 'idle' })`+
				` && document.querySelectorAll('tr.role').length === 2 && document.getElementById('status').textContent.includes('live')`)
	})

	var before time.Time
	ok = ok && t.Run("a turn shows its agent working, then idle, without a reload", func(t *testing.T) {
		eval[bool](t, ctx, `window.__sameDocument = true`)
		before = time.Now()
		acc, err := f.Client.SendAsync(in(t, ctx, 10*time.Second), leadshim.Message{To: "w-sim-1", From: "lead", Text: "look busy [delay=3s]"})
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, acc.ID)
		waitFor(t, ctx, "w-sim-1 working on the turn",
			fmt.Sprintf(`(r => r && r.dataset.state === 'working' && r.querySelector('[data-turn="%s"]'))(document.getElementById('agent-w-sim-1'))`, acc.ID))
		waitFor(t, ctx, "w-sim-1 idle again", `document.getElementById('agent-w-sim-1').dataset.state === 'idle'`)
		if !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Error("the page was reloaded")
		}
	})

	ok = ok && t.Run("the turn's timeline shows every step", func(t *testing.T) {
		navigate(t, ctx, base+"/?view=turn&id="+turns[0])
		waitFor(t, ctx, "the replied turn", `document.getElementById('turn-head').dataset.state === 'replied'`)
		steps := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#timeline [data-step]'), s => s.dataset.step)`)
		if got, want := strings.Join(steps, " "), "queued typed submitted replied"; got != want {
			t.Errorf("steps %q, want %q", got, want)
		}
		deltas := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#timeline [data-step] .delta'), d => d.textContent)`)
		for i, d := range deltas[1:] {
			if !strings.HasPrefix(d, "+") {
				t.Errorf("step %s has no time since the one before: %q", steps[i+1], d)
			}
		}
		if got := eval[string](t, ctx, `document.getElementById('turn-from').textContent`); got != "lead" {
			t.Errorf("sent by %q, want lead", got)
		}
		if got := eval[string](t, ctx, `document.getElementById('turn-reply').textContent`); got != simagent.DefaultReplyPrefix+"look busy [delay=3s]" {
			t.Errorf("reply %q", got)
		}
	})

	ok = ok && t.Run("a time before the turn shows it absent, and live returns", func(t *testing.T) {
		navigate(t, ctx, base+"/?view=turns")
		row := fmt.Sprintf(`document.getElementById('turn-%s')`, turns[0])
		waitFor(t, ctx, "the turn listed live", row+` !== null`)
		// The control is in the browser's zone: UTC here.
		// Set by script and checked as a time: Chromium keeps a
		// datetime-local value in its shortest form ("05.100" reads back
		// "05.1"), which chromedp.SetValue's string comparison took for a
		// failure one time in ten.
		value := before.UTC().Format("2006-01-02T15:04:05.000")
		set := fmt.Sprintf(`(() => { const el = document.getElementById('at'); el.value = %q; return Date.parse(el.value) === Date.parse(%q); })()`, value, value)
		if !eval[bool](t, ctx, set) {
			t.Fatalf("the time control did not take %s", value)
		}
		clickAndLoad(t, ctx, "#travel-go")
		waitFor(t, ctx, "the view of the past without the turn",
			`document.body.dataset.live === 'false' && document.getElementById('travel-banner') !== null && document.getElementById('turn-count') !== null && `+row+` === null`)
		shown := eval[string](t, ctx, `document.getElementById('travel-at').textContent`)
		if want := before.UTC().Format("15:04:05.000"); shown != want {
			t.Errorf("the banner says viewing %q, want %q", shown, want)
		}
		clickAndLoad(t, ctx, "#back-to-live")
		waitFor(t, ctx, "live again with the turn",
			`document.body.dataset.live === 'true' && document.getElementById('travel-banner') === null && `+row+` !== null`)
	})

	_ = ok && t.Run("cost totals are what the hooks recorded", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, to := range []string{"w-sim-2", "w-other-1", "w-sim-1"} {
			wg.Go(func() {
				env, err := f.Client.Send(in(t, ctx, 60*time.Second), leadshim.Message{To: to, From: "lead", Text: fmt.Sprintf("cost check %d", i)})
				mu.Lock()
				defer mu.Unlock()
				if err != nil || env.Status != string(lifecycle.StateReplied) {
					t.Errorf("send to %s: %+v %v", to, env, err)
					return
				}
				turns = append(turns, env.ID)
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var in64, out64, cache int64
		var usd float64
		for _, id := range turns {
			tu, ok, err := f.Gateway.Views.Turn(in(t, ctx, 5*time.Second), id)
			if err != nil || !ok || tu.State != lifecycle.StateReplied {
				t.Fatalf("turn %s: %+v %v", id, tu, err)
			}
			i, o, c := simagent.TokensFor(tu.Text, tu.Reply)
			in64, out64, cache, usd = in64+i, out64+o, cache+c, usd+simagent.CostFor(i, o, c)
		}
		navigate(t, ctx, base+"/?view=cost&by=role&since=1h")
		waitFor(t, ctx, "the cost of every turn", fmt.Sprintf(`document.getElementById('cost-total').dataset.turns === '%d'`, len(turns)))
		total := eval[map[string]string](t, ctx, `Object.assign({}, document.getElementById('cost-total').dataset)`)
		want := map[string]int64{"in": in64, "out": out64, "cacheRead": cache}
		for k, w := range want {
			if got, _ := strconv.ParseInt(total[k], 10, 64); got != w {
				t.Errorf("total %s: page says %q, the hooks recorded %d", k, total[k], w)
			}
		}
		if got, _ := strconv.ParseFloat(total["usd"], 64); math.Abs(got-usd) > 1e-9 {
			t.Errorf("total USD: page says %s, the hooks recorded %.9f", total["usd"], usd)
		}
		roles := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#cost tbody tr[data-key]'), r => r.dataset.key).sort()`)
		if strings.Join(roles, ",") != "w-other,w-sim" {
			t.Errorf("cost rows by role: %v", roles)
		}
	})
}

// With a token, the dashboard refuses a browser that has not signed in:
// it gets the sign-in form, a wrong token is refused, the right one opens
// the page — which may then read, and send only with its CSRF token.
func TestBrowserSignInWithTheToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	ctx := browser(t)
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	dash, err := dashboard.New(dashboard.Config{Log: f.Log, Fleet: f.Views.(dashboard.Fleet), Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shim, err := leadshim.New(leadshim.Config{Addr: ln.Addr().String(), Token: "open-sesame", Log: f.Log, Views: f.Views, Dashboard: dash})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(shim.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	// As in leadshim.Run, request contexts end with the server, so the
	// page's open event stream lets Close finish while the browser lives.
	sctx, stop := context.WithCancel(context.Background())
	hs.Config.BaseContext = func(net.Listener) context.Context { return sctx }
	hs.Start()
	t.Cleanup(func() { stop(); hs.Close() })

	navigate(t, ctx, hs.URL+"/?view=fleet")
	waitFor(t, ctx, "the sign-in form instead of the page", `document.getElementById('login') !== null && document.getElementById('view') === null`)
	if status := eval[int](t, ctx, `performance.getEntriesByType('navigation')[0].responseStatus`); status != http.StatusUnauthorized {
		t.Errorf("the page answered %d before sign-in, want 401", status)
	}

	signIn := func(token string) {
		t.Helper()
		if err := chromedp.Do(in(t, ctx, 10*time.Second), chromedp.SetValue(chromedp.ID("token"), token)); err != nil {
			t.Fatal(err)
		}
		clickAndLoad(t, ctx, `#login button[type=submit]`)
	}
	signIn("wrong")
	waitFor(t, ctx, "the wrong token refused", `document.getElementById('login-error') !== null && document.getElementById('view') === null`)
	signIn("open-sesame")
	waitFor(t, ctx, "the fleet view after sign-in", `document.getElementById('agent-w-1') !== null && document.getElementById('status').textContent.includes('live')`)
	if got := eval[string](t, ctx, `location.pathname + location.search`); got != "/?view=fleet" {
		t.Errorf("after sign-in the page is %q, want the one asked for", got)
	}
	if got := eval[string](t, ctx, `document.cookie`); got != "" {
		t.Errorf("the login cookie is readable from script: %q", got)
	}
	statuses, err := chromedp.Run(in(t, ctx, 10*time.Second), chromedp.Evaluate[[]int](
		`Promise.all([fetch('/roster'), fetch('/message', {method: 'POST', body: '{"to":"w-1","text":"x"}'})]).then(rs => rs.map(r => r.status))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	// A send without the page's CSRF token is refused (403): the
	// dashboard's own actions carry it (actions_browser_test.go).
	if len(statuses) != 2 || statuses[0] != http.StatusOK || statuses[1] != http.StatusForbidden {
		t.Errorf("signed in, GET /roster and POST /message answered %v, want [200 403]", statuses)
	}
}

// The log view's page never holds more than LogRows events, however many
// come: new ones go on top and the oldest leave, so a page left open on a
// busy fleet stays the same size.
func TestBrowserLogViewStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	const rows, burst = 10, 60
	chromium(t) // skip before starting anything
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	// Served before the browser starts, so the browser (and its event
	// stream) is gone before the server closes.
	_, base := serve(t, f, func(c *dashboard.Config) { c.LogRows = rows })
	ctx := browser(t)

	navigate(t, ctx, base+"/?view=log")
	waitFor(t, ctx, "the live log view", `document.getElementById('log-rows') !== null && document.getElementById('status').textContent.includes('live')`)
	// Every change to the list is seen once the handler that made it is
	// done: the most rows the page ever held.
	eval[bool](t, ctx, `(box => { window.__most = box.children.length; window.__updates = 0;
		new MutationObserver(() => { window.__updates++; window.__most = Math.max(window.__most, box.children.length) }).observe(box, {childList: true}); return true })(document.getElementById('log-rows'))`)
	var last uint64
	for i := range burst {
		last = f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentAttention{Reason: fmt.Sprintf("burst-%d", i)}}).Seq
	}
	// The burst's last event shown, newest first: the fleet's heartbeats
	// (every 3 s) may come after it on a loaded machine, and go above it.
	waitFor(t, ctx, "the burst's newest event, newest on top", fmt.Sprintf(`(box => { const seqs = [...box.children].map(c => Number(c.id.slice(3)));
		return seqs.includes(%d) && seqs.every((s, i) => i === 0 || seqs[i-1] > s) })(document.getElementById('log-rows'))`, last))
	if n := eval[int](t, ctx, `document.getElementById('log-rows').children.length`); n != rows {
		t.Errorf("the page holds %d events, want the newest %d", n, rows)
	}
	if most := eval[int](t, ctx, `window.__most`); most > rows {
		t.Errorf("the page held %d events at one point, over its cap of %d", most, rows)
	}
	t.Logf("%d events came in %d updates of the page", burst, eval[int](t, ctx, `window.__updates`))
}
