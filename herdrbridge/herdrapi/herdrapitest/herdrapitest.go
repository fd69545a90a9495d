package herdrapitest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// Fast speeds up the fake's pacing where pacing is not what a test checks;
// SubmitDelay stays herdr's 300 ms because tests assert it.
var Fast = herdrtest.Config{PollInterval: 20 * time.Millisecond, DetectInterval: 20 * time.Millisecond}

// Start starts a fake herdr and a client whose every request is
// validated against herdr's schema on the way out (the server validates
// them again on the way in, and its own answers too).
func Start(t testing.TB, cfg herdrtest.Config) (*herdrtest.Server, *herdrapi.Client) {
	t.Helper()
	v := herdrschema.Schema(t)
	cfg.Validator = v
	srv := herdrtest.Start(t, cfg)
	return srv, herdrapi.New(srv.Path(), herdrapi.WithDialer(ValidatingDialer(v, func(err error) {
		t.Errorf("client sent an invalid request: %v", err)
	})))
}

// ValidatingDialer checks each request line the client writes.
func ValidatingDialer(v *herdrschema.Validator, report func(error)) herdrapi.Dialer {
	return func(ctx context.Context, path string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return nil, err
		}
		return &validatingConn{Conn: c, v: v, report: report}, nil
	}
}

type validatingConn struct {
	net.Conn
	v      *herdrschema.Validator
	report func(error)
	buf    []byte
}

func (c *validatingConn) Write(b []byte) (int, error) {
	c.buf = append(c.buf, b...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			break
		}
		if err := c.v.ValidateRequest(c.buf[:i]); err != nil {
			c.report(err)
		}
		c.buf = c.buf[i+1:]
	}
	return c.Conn.Write(b)
}

// ReadContains waits until the pane's recent text contains want.
func ReadContains(t testing.TB, c *herdrapi.Client, paneID, want string) string {
	t.Helper()
	var text string
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		r, err := c.Read(context.Background(), herdrapi.ReadRequest{PaneID: paneID, Source: herdrapi.SourceRecent})
		if err != nil {
			return err
		}
		text = r.Text
		if !bytes.Contains([]byte(text), []byte(want)) {
			return fmt.Errorf("pane %s text %q does not contain %q", paneID, text, want)
		}
		return nil
	})
	return text
}

// StatusIs waits until agent.get reports one of want.
func StatusIs(t testing.TB, c *herdrapi.Client, target string, want ...herdrapi.AgentStatus) herdrapi.AgentInfo {
	t.Helper()
	var info herdrapi.AgentInfo
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		var err error
		if info, err = c.Agent(context.Background(), target); err != nil {
			return err
		}
		for _, w := range want {
			if info.AgentStatus == w {
				return nil
			}
		}
		return fmt.Errorf("agent %s status %s, want %v", target, info.AgentStatus, want)
	})
	return info
}

// NextEvent returns the next event of one of kinds for paneID, skipping
// others, within 5 s.
func NextEvent(t testing.TB, s *herdrapi.Stream, paneID string, kinds ...herdrapi.EventKind) herdrapi.Event {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatalf("stream ended waiting for %v on %s: %v", kinds, paneID, s.Err())
			}
			if paneID != "" && ev.PaneID != paneID {
				continue
			}
			for _, k := range kinds {
				if ev.Kind == k {
					return ev
				}
			}
		case <-timeout:
			t.Fatalf("no %v event for %s within 5s", kinds, paneID)
		}
	}
}

// ShellPane creates a workspace through c and returns its root pane, which
// runs herdr's default shell.
func ShellPane(t testing.TB, c *herdrapi.Client) herdrapi.PaneInfo {
	t.Helper()
	ws, err := c.CreateWorkspace(context.Background(), herdrapi.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return ws.RootPane
}

// Spawn starts a pane running spec.Argv directly in the fake (no shell),
// failing the test if it cannot.
func Spawn(t testing.TB, srv *herdrtest.Server, spec herdrtest.PaneSpec) herdrtest.Pane {
	t.Helper()
	p, err := srv.SpawnPane(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// AgentScript runs script under sh with the HERDR_AGENT=claude wrapper
// hint, so herdr detects the pane as Claude without the real binary.
func AgentScript(script string) []string {
	return []string{"env", "HERDR_AGENT=claude", "sh", "-c", script}
}
