package leadshim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// csrfPage stands in for a dashboard: its body is the CSRF token the
// shim handed it for the page.
var csrfPage = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = w.Write([]byte(r.Header.Get(leadshim.CSRFHeader)))
})

// postWith posts body to path with c and the header pairs given.
func postWith(t *testing.T, c *http.Client, u, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, b := do(t, c, req)
	return res.StatusCode, b
}

// With a token, a signed-in browser may act — send, cancel, stop,
// restart, spawn — only with its page's CSRF token: the shim hands the
// page its sign-in's token (whatever the client claimed), an action
// without it or with another sign-in's is refused 403 csrf, and the
// bearer token needs none.
func TestSignedInActionsNeedThePagesCSRFToken(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Addr, c.Token, c.Dashboard = "0.0.0.0:0", "s3cret", csrfPage })
	alice, mallory := browser(t), browser(t)
	signIn(t, alice, base, "s3cret", "/")
	signIn(t, mallory, base, "s3cret", "/")
	_, token := get(t, alice, base+"/", leadshim.CSRFHeader, "forged")
	_, other := get(t, mallory, base+"/ui/view")
	if token == "" || token == "forged" || token == other {
		t.Fatalf("the page's CSRF tokens: %q and another sign-in's %q", token, other)
	}
	send := `{"to":"w1","text":"hello","wait":false}`
	for _, tc := range []struct {
		name   string
		header []string
		status int
	}{
		{"without the token", nil, http.StatusForbidden},
		{"with a wrong one", []string{leadshim.CSRFHeader, "forged"}, http.StatusForbidden},
		{"with another sign-in's", []string{leadshim.CSRFHeader, other}, http.StatusForbidden},
		{"with the page's", []string{leadshim.CSRFHeader, token}, http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := postWith(t, alice, base+"/message", send, tc.header...)
			if status != tc.status {
				t.Errorf("send %s: %d %s, want %d", tc.name, status, b, tc.status)
			}
			if status == http.StatusForbidden && errorOf(t, []byte(b)).Code != "csrf" {
				t.Errorf("send %s: %s, want code csrf", tc.name, b)
			}
		})
	}
	for _, path := range []string{"/agents/w1/stop", "/agents/w1/restart", "/message/01JF6Z0000000000000000000A/cancel", "/agents"} {
		if status, b := postWith(t, alice, base+path, `{}`); status != http.StatusForbidden {
			t.Errorf("POST %s with the cookie alone: %d %s, want 403", path, status, b)
		}
	}
	if status, b := postWith(t, http.DefaultClient, base+"/message", send, "Authorization", "Bearer s3cret"); status != http.StatusAccepted {
		t.Errorf("a send with the bearer token: %d %s", status, b)
	}
}

// Without a token (loopback) scripts post as before, and the dashboard's
// page with its token; a request a browser says another site's page made
// — or with a wrong token — is refused 403 csrf.
func TestLoopbackRefusesCrossSitePosts(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Dashboard = csrfPage })
	c := browser(t)
	_, token := get(t, c, base+"/")
	send := `{"to":"w1","text":"hello","wait":false}`
	for _, tc := range []struct {
		name   string
		header []string
		status int
	}{
		{"a script", nil, http.StatusAccepted},
		{"the page", []string{leadshim.CSRFHeader, token, "Sec-Fetch-Site", "same-origin"}, http.StatusAccepted},
		{"the same origin", []string{"Origin", base}, http.StatusAccepted},
		{"another site", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"another origin", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"a wrong token", []string{leadshim.CSRFHeader, "forged"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, b := postWith(t, c, base+"/message", send, tc.header...); status != tc.status {
				t.Errorf("%s: %d %s, want %d", tc.name, status, b, tc.status)
			}
		})
	}
}
