package leadshim_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// rawConn is a TCP connection to the shim that sends exactly what a test
// (an attacker) writes.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, base string) *rawConn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// response reads one response's status and headers (not its body),
// failing after within: a fail-safe, not what the test measures.
func (c *rawConn) response(t *testing.T, within time.Duration) *http.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	res, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	return res
}

// closed waits (up to within, a fail-safe) for the server to close the
// connection, discarding what it sends first; it fails on the fail-safe.
func (c *rawConn) closed(t *testing.T, within time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c.r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the shim did not close the connection within %s", within)
	}
}

// waitStats polls the shim's accounting until ok holds.
func waitStats(t *testing.T, s *leadshim.Server, what string, ok func(leadshim.Stats) bool) leadshim.Stats {
	t.Helper()
	var st leadshim.Stats
	checkfor.Eventually(t, 20*time.Second, 5*time.Millisecond, func() error {
		if st = s.Stats(); !ok(st) {
			return fmt.Errorf("%s: stats %+v", what, st)
		}
		return nil
	})
	return st
}

func TestSlowClientsAreCutOffByTheirTimeoutsWhileTheShimKeepsAnswering(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	s, base := runShim(t, f, func(c *leadshim.Config) {
		c.ReadHeaderTimeout, c.BodyTimeout, c.IdleTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	})
	const n = 20
	var headers, bodies []*rawConn
	for range n {
		// Slowloris: a request line and half a header, then nothing.
		c := dial(t, base)
		c.send(t, "POST /message HTTP/1.1\r\nHost: fleetd\r\nContent-Le")
		headers = append(headers, c)
		// A slow body: 1000 bytes announced, one sent.
		c = dial(t, base)
		c.send(t, "POST /message HTTP/1.1\r\nHost: fleetd\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		bodies = append(bodies, c)
	}
	waitStats(t, s, "all slow connections accepted", func(st leadshim.Stats) bool { return st.Conns >= 2*n })

	// Meanwhile, everyone else is served.
	for _, path := range []string{"/healthz", "/roster"} {
		if status, body := fleettest.Do(t, http.MethodGet, base+path, ""); status != http.StatusOK {
			t.Errorf("GET %s while slow clients hang on: %d %s", path, status, body)
		}
	}
	// The half headers are closed without an answer; the slow bodies get
	// 408 and are closed.
	for _, c := range headers {
		c.closed(t, 20*time.Second)
	}
	for _, c := range bodies {
		res := c.response(t, 20*time.Second)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusRequestTimeout || errorOf(t, b).Code != "body_timeout" {
			t.Fatalf("slow body: %d %s", res.StatusCode, b)
		}
		c.closed(t, 20*time.Second)
	}
	// A keep-alive connection that sends no next request is closed too.
	c := dial(t, base)
	c.send(t, "GET /healthz HTTP/1.1\r\nHost: fleetd\r\n\r\n")
	if res := c.response(t, 20*time.Second); res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", res.StatusCode)
	}
	c.closed(t, 20*time.Second)
	http.DefaultClient.CloseIdleConnections()
	waitStats(t, s, "every connection closed", func(st leadshim.Stats) bool { return st.Conns == 0 && st.PendingConns == 0 })
}

func TestAuthIsDecidedFromTheHeadersBeforeTheBodyArrives(t *testing.T) {
	f := fleettest.New(t)
	// A body timeout far beyond the test: the 401 must not wait for it.
	_, base := runShim(t, f, func(c *leadshim.Config) { c.Token, c.BodyTimeout = "s3cret", time.Hour })
	c := dial(t, base)
	c.send(t, "POST /message HTTP/1.1\r\nHost: fleetd\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	res := c.response(t, 20*time.Second)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusUnauthorized || errorOf(t, b).Code != "unauthorized" || !res.Close {
		t.Fatalf("unauthenticated slow body: %d close=%v %s", res.StatusCode, res.Close, b)
	}
	c.closed(t, 20*time.Second)
}

func TestConnectionCapsRefuseExtraConnectionsAtOnce(t *testing.T) {
	f := fleettest.New(t)
	s, base := runShim(t, f, func(c *leadshim.Config) {
		c.MaxConns, c.MaxPendingConns, c.ReadHeaderTimeout, c.MaxHeaderBytes = 6, 3, time.Hour, 4096
	})
	// Three connections that send nothing fill the pending cap.
	var idle []*rawConn
	for range 3 {
		idle = append(idle, dial(t, base))
	}
	waitStats(t, s, "three pending", func(st leadshim.Stats) bool { return st.PendingConns == 3 })
	refusedNow := func(what string) {
		t.Helper()
		c := dial(t, base)
		res := c.response(t, 20*time.Second)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusServiceUnavailable || errorOf(t, b).Code != "too_many_connections" {
			t.Fatalf("%s: %d %s", what, res.StatusCode, b)
		}
		c.closed(t, 20*time.Second)
	}
	refusedNow("a fourth pending connection")
	if st := s.Stats(); st.ConnsRefused != 1 {
		t.Fatalf("refused %d, want 1", st.ConnsRefused)
	}
	// One of them goes: there is room again, for a whole request.
	idle[0].Close()
	waitStats(t, s, "two pending", func(st leadshim.Stats) bool { return st.PendingConns == 2 })
	var served []*rawConn
	for range 4 {
		c := dial(t, base)
		c.send(t, "GET /healthz HTTP/1.1\r\nHost: fleetd\r\n\r\n")
		res := c.response(t, 20*time.Second)
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %d", res.StatusCode)
		}
		served = append(served, c) // kept alive, idle, no longer pending
	}
	waitStats(t, s, "six open", func(st leadshim.Stats) bool { return st.Conns == 6 && st.PendingConns == 2 })
	refusedNow("a seventh connection")
	// Headers over MaxHeaderBytes are refused too (431).
	served[0].send(t, "GET /healthz HTTP/1.1\r\nHost: fleetd\r\nX-Big: "+strings.Repeat("x", 16<<10)+"\r\n\r\n")
	if res := served[0].response(t, 20*time.Second); res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("16 KiB of headers: %d", res.StatusCode)
	}
}

// The timeouts bound reading a request, never the answer: a blocking send
// that takes longer than all of them still answers, and an event stream
// opened before it still delivers its reply.
func TestTimeoutsNeverCutABlockingSendOrAnEventStream(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.RunAgents(time.Second)
	_, base := runShim(t, f, func(c *leadshim.Config) {
		c.ReadHeaderTimeout, c.BodyTimeout, c.IdleTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	})
	sc := openSSE(t, base+"/events?subject=fleet.agent.w1.replied")
	status, body := post(t, base, `{"to":"w1","text":"take your time","timeout":"30s"}`)
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "replied" || env.DurationMS < 1000 {
		t.Fatalf("blocking send: %d %s", status, body)
	}
	if got := readSSE(t, sc, 1); got[0].event != "fleet.agent.replied" {
		t.Fatalf("stream: %+v", got)
	}
}

func TestDoorLimitsAreValidated(t *testing.T) {
	f := fleettest.New(t)
	for _, mod := range []func(*leadshim.Config){
		func(c *leadshim.Config) { c.BodyTimeout = -time.Second },
		func(c *leadshim.Config) { c.MaxConns = -1 },
		func(c *leadshim.Config) { c.MaxEventReaders = -1 },
		func(c *leadshim.Config) { c.MaxConns, c.MaxPendingConns = 10, 20 },
	} {
		cfg := leadshim.Config{Log: f.Log, Views: f.Views}
		mod(&cfg)
		if _, err := leadshim.New(cfg); !errors.Is(err, leadshim.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	// Two problems at once are both reported.
	_, err := leadshim.New(leadshim.Config{Log: f.Log, Views: f.Views, MaxConns: -1, EventBuffer: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxConns") || !strings.Contains(err.Error(), "EventBuffer") {
		t.Errorf("joined errors: %v", err)
	}
}
