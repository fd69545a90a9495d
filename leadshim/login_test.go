package leadshim_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// page stands in for a dashboard: it says which path it served.
var page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = w.Write([]byte("dashboard " + r.URL.Path))
})

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so a test sees each answer.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, c, req)
}

func signIn(t *testing.T, c *http.Client, base, token, next string) *http.Response {
	t.Helper()
	res, err := c.PostForm(base+"/login", url.Values{"token": {token}, "next": {next}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// With a token, a browser that has not signed in gets the sign-in form
// (401) for a dashboard page and JSON 401s elsewhere; a wrong token is
// refused; the right one sets an HttpOnly, SameSite=Strict cookie that
// opens the dashboard and the read endpoints — and a send only with its
// page's CSRF token.
func TestDashboardSignInWithTheToken(t *testing.T) {
	f := fleettest.New(t)
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Addr, c.Token, c.Dashboard = "0.0.0.0:0", "s3cret", page })
	c := browser(t)

	res, body := get(t, c, base+"/", "Accept", "text/html")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `<form method="post" action="/login"`) || strings.Contains(body, "dashboard /") {
		t.Fatalf("GET / before sign-in: %d\n%s", res.StatusCode, body)
	}
	if res, body := get(t, c, base+"/ui/view?view=fleet"); res.StatusCode != http.StatusUnauthorized || errorOf(t, []byte(body)).Code != "unauthorized" {
		t.Errorf("a fragment without Accept text/html: %d %s", res.StatusCode, body)
	}

	if res := signIn(t, c, base, "wrong", "/"); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Fatalf("wrong token: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	res = signIn(t, c, base, "s3cret", "/?view=turns")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/?view=turns" {
		t.Fatalf("sign-in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	ck := res.Cookies()
	if len(ck) != 1 || ck[0].Name != leadshim.SessionCookie || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Value == "" {
		t.Fatalf("cookie %+v", ck)
	}
	if strings.Contains(ck[0].Value, "s3cret") {
		t.Errorf("the cookie carries the token itself: %q", ck[0].Value)
	}

	for _, path := range []string{"/", "/ui/view?view=fleet", "/roster"} {
		if res, body := get(t, c, base+path, "Accept", "text/html"); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s signed in: %d %s", path, res.StatusCode, body)
		}
	}
	// The cookie opens the dashboard's actions only with its page's CSRF
	// token (csrf_test.go), and nothing else that writes.
	req, _ := http.NewRequest(http.MethodPost, base+"/message", strings.NewReader(`{"to":"w1","text":"x"}`))
	if res, body := do(t, c, req); res.StatusCode != http.StatusForbidden || errorOf(t, []byte(body)).Code != "csrf" {
		t.Errorf("a send with only the cookie: %d %s, want 403 csrf", res.StatusCode, body)
	}
	req, _ = http.NewRequest(http.MethodPost, base+"/inbox/w1", strings.NewReader(`{"from":"x","text":"x"}`))
	if res, body := do(t, c, req); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("an inbox post with only the cookie: %d %s, want 401", res.StatusCode, body)
	}

	req, _ = http.NewRequest(http.MethodPost, base+"/logout", nil)
	if res, _ := do(t, c, req); res.StatusCode != http.StatusSeeOther {
		t.Errorf("sign out: %d", res.StatusCode)
	}
	if res, _ := get(t, c, base+"/", "Accept", "text/html"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / signed out: %d", res.StatusCode)
	}
}

// A cookie that is forged, tampered with, expired or minted for another
// token opens nothing; a redirect after sign-in never leaves the shim.
func TestDashboardCookieMustBeGenuine(t *testing.T) {
	f := fleettest.New(t)
	now := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	_, base := newShim(t, f, func(c *leadshim.Config) {
		c.Addr, c.Token, c.Dashboard, c.Now, c.LoginTTL = "0.0.0.0:0", "s3cret", page, clock, time.Hour
	})
	c := browser(t)
	res := signIn(t, c, base, "s3cret", "//evil.example/x")
	if loc := res.Header.Get("Location"); loc != "/" {
		t.Errorf("sign-in to //evil.example/x redirected to %q, want /", loc)
	}
	good := res.Cookies()[0].Value

	try := func(value string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/roster", nil)
		req.AddCookie(&http.Cookie{Name: leadshim.SessionCookie, Value: value})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := try(good); got != http.StatusOK {
		t.Fatalf("the genuine cookie: %d", got)
	}
	parts := strings.Split(good, ".") // v2.<id>.<expiry>.<mac>
	for name, v := range map[string]string{
		"empty":             "",
		"the token":         "s3cret",
		"a later expiry":    parts[0] + "." + parts[1] + "." + "9999999999" + "." + parts[3],
		"another id":        parts[0] + "." + strings.Repeat("A", len(parts[1])) + "." + parts[2] + "." + parts[3],
		"another MAC":       parts[0] + "." + parts[1] + "." + parts[2] + "." + strings.Repeat("A", len(parts[3])),
		"no MAC":            parts[0] + "." + parts[1] + "." + parts[2],
		"an unknown format": "v3." + parts[1] + "." + parts[2] + "." + parts[3],
	} {
		if got := try(v); got != http.StatusUnauthorized {
			t.Errorf("cookie %s: %d, want 401", name, got)
		}
	}
	now = now.Add(time.Hour + time.Second)
	if got := try(good); got != http.StatusUnauthorized {
		t.Errorf("an expired cookie: %d, want 401", got)
	}
}

// Without a token the dashboard is open (loopback) and there is nothing
// to sign in to; without a dashboard, / is still a JSON 404.
func TestDashboardWithoutTokenOrWithoutDashboard(t *testing.T) {
	f := fleettest.New(t)
	_, open := newShim(t, f, func(c *leadshim.Config) { c.Dashboard = page })
	c := browser(t)
	if res, body := get(t, c, open+"/", "Accept", "text/html"); res.StatusCode != http.StatusOK || body != "dashboard /" {
		t.Errorf("open GET /: %d %q", res.StatusCode, body)
	}
	if res, _ := get(t, c, open+"/login?next=/ui/x"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/x" {
		t.Errorf("GET /login without a token: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	_, bare := newShim(t, f, nil)
	if res, body := get(t, c, bare+"/", "Accept", "text/html"); res.StatusCode != http.StatusNotFound || errorOf(t, []byte(body)).Code != "not_found" {
		t.Errorf("GET / without a dashboard: %d %s", res.StatusCode, body)
	}
}
