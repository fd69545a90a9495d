package leadshim_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/router"
)

// newShim builds a shim over f and serves its handler on a test server.
func newShim(t testing.TB, f *fleettest.Fleet, mod func(*leadshim.Config)) (*leadshim.Server, string) {
	t.Helper()
	cfg := leadshim.Config{Log: f.Log, Views: f.Views, NC: f.NATS.NC, Host: "h1",
		Roles: roles.Config{Roles: map[string]roles.Role{"w": {Cap: 2, Description: "workers"}}}}
	if mod != nil {
		mod(&cfg)
	}
	s, err := leadshim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// runShim runs a whole shim (HTTP on a loopback port, micro service,
// outcome counting) until the test ends, and returns its base URL.
func runShim(t testing.TB, f *fleettest.Fleet, mod func(*leadshim.Config)) (*leadshim.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := leadshim.Config{Listener: ln, Log: f.Log, Views: f.Views, NC: f.NATS.NC, Host: "h1"}
	if mod != nil {
		mod(&cfg)
	}
	s, err := leadshim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "shim run", s.Run)
	return s, "http://" + ln.Addr().String()
}

// startRouter runs a router over f until the test ends.
func startRouter(t testing.TB, f *fleettest.Fleet, rc roles.Config) {
	t.Helper()
	r, err := router.New(router.Config{Log: f.Log, JS: f.NATS.JS, Views: f.Views, Roles: rc, Host: "h1", Poll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Run(t, "router run", r.Run)
}

func post(t testing.TB, base, body string) (int, []byte) {
	t.Helper()
	return fleettest.Do(t, http.MethodPost, base+"/message", body)
}

// postAsync posts a send that does not wait ("wait":false) and returns
// what the 202 answer says.
func postAsync(t testing.TB, base, body string) leadshim.Accepted {
	t.Helper()
	status, b := post(t, base, body)
	if status != http.StatusAccepted {
		t.Fatalf("%s: status %d: %s", body, status, b)
	}
	return mustJSON[leadshim.Accepted](t, b)
}

func mustJSON[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// errorOf decodes an error answer and checks its shape.
func errorOf(t testing.TB, b []byte) leadshim.ErrorBody {
	t.Helper()
	var e leadshim.Error
	if err := json.Unmarshal(b, &e); err != nil || e.Err.Code == "" || e.Err.Message == "" {
		t.Fatalf("not a JSON error {error:{code,message}}: %s (%v)", b, err)
	}
	return e.Err
}

// forKinds runs test against the folded and the materialized views.
func forKinds(t *testing.T, test func(*testing.T, fleettest.Kind)) {
	for _, kind := range fleettest.Kinds {
		t.Run(string(kind), func(t *testing.T) { test(t, kind) })
	}
}

// do sends req with c and returns the answer, its body read and closed.
func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}
