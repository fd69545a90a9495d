package leadshim_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// A redirect after sign-in goes to a path of this shim only, as a browser
// reads it: it drops tabs and newlines and takes a backslash for a slash,
// so "/\t/evil.example" is "//evil.example" to it.
func TestSignInRedirectsOnlyToALocalPath(t *testing.T) {
	f := fleettest.New(t)
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Dashboard = page }) // no token: GET /login redirects at once
	c := browser(t)
	for next, want := range map[string]string{
		"/%09/evil.example":          "/",
		"/%0a/evil.example":          "/",
		"/%0d/evil.example":          "/",
		"%2F%2Fevil.example":         "/",
		"/%5Cevil.example":           "/",
		"/%5C%5Cevil.example":        "/",
		"%5C/evil.example":           "/",
		"/%7F/evil.example":          "/",
		"/%C2%85/evil.example":       "/",
		"https://evil.example/":      "/",
		"javascript:alert(1)":        "/",
		"/ui/x%3Fview=turns%26id=T1": "/ui/x?view=turns&id=T1",
		"/?view=jobs":                "/?view=jobs",
	} {
		res, _ := get(t, c, base+"/login?next="+next)
		if got := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || got != want {
			t.Errorf("GET /login?next=%s: %d to %q, want %q", next, res.StatusCode, got, want)
		}
	}
}

// Signing out ends the sign-in on the shim: the cookie, and any copy of
// it taken before, opens nothing after — it did for the rest of its 12 h.
func TestSignOutEndsTheSessionOnTheServer(t *testing.T) {
	f := fleettest.New(t)
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Addr, c.Token, c.Dashboard = "0.0.0.0:0", "s3cret", page })
	c := browser(t)
	res := signIn(t, c, base, "s3cret", "/")
	if len(res.Cookies()) != 1 {
		t.Fatalf("sign-in set %v", res.Cookies())
	}
	copied := res.Cookies()[0].Value
	withCopy := func() int {
		req, _ := http.NewRequest(http.MethodGet, base+"/roster", nil)
		req.AddCookie(&http.Cookie{Name: leadshim.SessionCookie, Value: copied})
		res, _ := do(t, http.DefaultClient, req)
		return res.StatusCode
	}
	if got := withCopy(); got != http.StatusOK {
		t.Fatalf("the copied cookie while signed in: %d", got)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/logout", nil)
	if res, _ := do(t, c, req); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", res.StatusCode)
	}
	if got := withCopy(); got != http.StatusUnauthorized {
		t.Errorf("the copied cookie after sign-out: %d, want 401", got)
	}
	// Another browser's sign-in is its own: signing out one leaves it.
	other := browser(t)
	signIn(t, other, base, "s3cret", "/")
	signIn(t, c, base, "s3cret", "/")
	req, _ = http.NewRequest(http.MethodPost, base+"/logout", nil)
	do(t, c, req)
	if res, _ := get(t, other, base+"/roster"); res.StatusCode != http.StatusOK {
		t.Errorf("another browser after one signed out: %d", res.StatusCode)
	}
}

// Wrong tokens are throttled per client: after its allowance, a client
// is answered 429 (with Retry-After) whatever it presents — the right
// token too, so a guesser learns nothing — until the allowance refills;
// another client is not held up, and requests presenting no token spend
// nothing.
func TestWrongTokensAreThrottledPerClient(t *testing.T) {
	f := fleettest.New(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, _ := newShim(t, f, func(c *leadshim.Config) {
		c.Addr, c.Token, c.Dashboard, c.Now = "0.0.0.0:0", "s3cret", page, clock
		c.AuthFailures, c.AuthFailEvery = 3, 10*time.Second
	})
	h := s.Handler()
	serve := func(from, method, path, body string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = from
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	login := func(from, token string) int {
		return serve(from, http.MethodPost, "/login", url.Values{"token": {token}}.Encode(),
			"Content-Type", "application/x-www-form-urlencoded").Code
	}
	bearer := func(from, token string) int {
		return serve(from, http.MethodGet, "/roster", "", "Authorization", "Bearer "+token).Code
	}
	const guesser, lead = "192.0.2.7:40000", "198.51.100.1:40000"

	for range 10 { // no token presented: not a guess
		if got := serve(guesser, http.MethodGet, "/roster", "").Code; got != http.StatusUnauthorized {
			t.Fatalf("no token: %d", got)
		}
	}
	if got := login(guesser, "a"); got != http.StatusUnauthorized {
		t.Fatalf("first wrong sign-in: %d", got)
	}
	if got := bearer(guesser, "b"); got != http.StatusUnauthorized {
		t.Fatalf("a wrong bearer token: %d", got)
	}
	if got := login(guesser, "c"); got != http.StatusUnauthorized {
		t.Fatalf("third wrong sign-in: %d", got)
	}
	rec := serve(guesser, http.MethodPost, "/login", url.Values{"token": {"s3cret"}}.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "10" || len(rec.Result().Cookies()) != 0 {
		t.Errorf("the right token once throttled: %d Retry-After %q cookies %v, want 429 in 10 s and no cookie",
			rec.Code, rec.Header().Get("Retry-After"), rec.Result().Cookies())
	}
	if got := bearer(guesser, "s3cret"); got != http.StatusTooManyRequests {
		t.Errorf("the right bearer token once throttled: %d, want 429", got)
	}
	if got := bearer(lead, "s3cret"); got != http.StatusOK {
		t.Errorf("another client: %d", got)
	}
	if got := login("[2001:db8::1]:1", "x"); got != http.StatusUnauthorized {
		t.Errorf("an IPv6 client's first guess: %d", got)
	}

	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	if got := bearer(guesser, "s3cret"); got != http.StatusOK {
		t.Errorf("the right token once a failure refilled: %d", got)
	}
	if got := bearer(guesser, "wrong"); got != http.StatusUnauthorized {
		t.Errorf("one more guess: %d", got)
	}
	if got := bearer(guesser, "wrong"); got != http.StatusTooManyRequests {
		t.Errorf("a guess past the refill: %d, want 429", got)
	}
}

// /healthz answers anyone whether fleetd serves, but only the token's
// holder (or a signed-in browser) which agents are dead and why.
func TestHealthNamesAgentsOnlyToTheTokenHolder(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.MustAppend(events.Event{Subject: "w1", Data: events.AgentExited{Pane: "p-w1", Reason: "pane_exited"}})
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Addr, c.Token, c.Dashboard = "0.0.0.0:0", "s3cret", page })

	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "", "Authorization", "Bearer s3cret")
		if h := mustJSON[leadshim.Health](t, body); status != http.StatusOK || h.Status != "degraded" || !strings.Contains(strings.Join(h.Reasons, " "), "w1") {
			return fmt.Errorf("with the token: %d %s", status, body)
		}
		return nil
	})
	status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "")
	var open map[string]any
	if err := json.Unmarshal(body, &open); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || open["status"] != "degraded" || len(open) != 1 || bytes.Contains(body, []byte("w1")) {
		t.Errorf("without the token: %d %s, want only the status", status, body)
	}
	c := browser(t)
	signIn(t, c, base, "s3cret", "/")
	if _, body := get(t, c, base+"/healthz"); !strings.Contains(body, "w1") {
		t.Errorf("signed in: %s, want the reasons", body)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// the server's TLS config and a pool that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleetd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

// With TLS the shim serves HTTPS only: a client trusting its certificate
// sends with the token, a sign-in's cookie is Secure, and plain HTTP
// gets nothing of the API.
func TestTheShimServesTLS(t *testing.T) {
	f := fleettest.New(t)
	srvTLS, pool := selfSigned(t)
	_, base := runShim(t, f, func(c *leadshim.Config) { c.Token, c.TLS, c.Dashboard = "s3cret-0123456789abcdef", srvTLS, page })
	secure := strings.Replace(base, "http://", "https://", 1)

	client := leadshim.NewClient(secure, "s3cret-0123456789abcdef", leadshim.WithTLS(&tls.Config{RootCAs: pool}))
	if _, err := client.Roster(fleettest.Ctx(t)); err != nil {
		t.Fatalf("roster over TLS: %v", err)
	}
	if _, err := leadshim.NewClient(secure, "s3cret-0123456789abcdef").Roster(fleettest.Ctx(t)); err == nil {
		t.Error("a client that does not trust the certificate was answered")
	}
	status, body := fleettest.Do(t, http.MethodGet, base+"/roster", "", "Authorization", "Bearer s3cret-0123456789abcdef")
	if status == http.StatusOK {
		t.Errorf("plain HTTP to the TLS shim: %d %s", status, body)
	}

	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res := signIn(t, b, secure, "s3cret-0123456789abcdef", "/")
	if ck := res.Cookies(); len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Errorf("the sign-in cookie over TLS: %+v, want Secure and HttpOnly", ck)
	}
}

// syncBuffer is a log destination tests read while the shim writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Off loopback the shim says as it starts what the network could do with
// it: guess a short token, and read the token without TLS. A long token
// behind TLS, or loopback, draws no warning.
func TestAWeakTokenOrNoTLSOffLoopbackIsWarnedAbout(t *testing.T) {
	f := fleettest.New(t)
	run := func(addr, token string, tlsCfg *tls.Config) (*syncBuffer, *leadshim.Client) {
		var buf syncBuffer
		_, base := runShim(t, f, func(c *leadshim.Config) {
			c.Addr, c.Token, c.TLS, c.Logger = addr, token, tlsCfg, slog.New(slog.NewTextHandler(&buf, nil))
		})
		if tlsCfg != nil {
			base = strings.Replace(base, "http://", "https://", 1)
		}
		return &buf, leadshim.NewClient(base, token, leadshim.WithTLS(&tls.Config{InsecureSkipVerify: true}))
	}
	// Run warns before it serves: once a request is answered, whatever it
	// had to say is in the log.
	answered := func(c *leadshim.Client) {
		t.Helper()
		if _, err := c.Health(fleettest.Ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	weak, c := run("0.0.0.0:0", "a", nil)
	answered(c)
	if s := weak.String(); !strings.Contains(s, "the token is 1 characters") || !strings.Contains(s, "no TLS") {
		t.Errorf("token a off loopback without TLS logged: %s", s)
	}
	srvTLS, _ := selfSigned(t)
	strong, c := run("0.0.0.0:0", "0123456789abcdef0123", srvTLS)
	answered(c)
	loop, c := run("127.0.0.1:0", "", nil)
	answered(c)
	for name, buf := range map[string]*syncBuffer{"a long token with TLS": strong, "loopback": loop} {
		if s := buf.String(); strings.Contains(s, "WARN") {
			t.Errorf("%s logged: %s", name, s)
		}
	}
}
