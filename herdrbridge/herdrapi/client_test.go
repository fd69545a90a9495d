package herdrapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineServer is a minimal one-request-per-connection socket that answers
// each request line with reply(line), for tests of the client's own
// behaviour without herdr's semantics. reply returning "" sends nothing and
// holds the connection until the test ends.
func lineServer(t *testing.T, reply func(req map[string]any) string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hb")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
		os.RemoveAll(dir)
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				line, err := bufio.NewReader(conn).ReadBytes('\n')
				if err != nil {
					return
				}
				var req map[string]any
				json.Unmarshal(line, &req)
				out := reply(req)
				if out == "" {
					<-done
					return
				}
				conn.Write([]byte(out + "\n"))
			})
		}
	})
	return path
}

func TestCheckRejectsOtherProtocol(t *testing.T) {
	path := lineServer(t, func(req map[string]any) string {
		return `{"id":"` + req["id"].(string) + `","result":{"type":"pong","version":"0.7.0","protocol":19,"capabilities":null}}`
	})
	_, err := Connect(context.Background(), path)
	if !errors.Is(err, ErrProtocolMismatch) {
		t.Fatalf("Connect = %v, want ErrProtocolMismatch", err)
	}
	for _, want := range []string{"protocol 19", "protocol 20", "0.7.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestErrorsAreTyped(t *testing.T) {
	path := lineServer(t, func(req map[string]any) string {
		switch req["method"] {
		case "pane.get":
			return `{"id":"` + req["id"].(string) + `","error":{"code":"pane_not_found","message":"pane w9:p9 not found"}}`
		case "agent.prompt":
			return `{"id":"` + req["id"].(string) + `","error":{"code":"agent_not_ready","message":"no agent"}}`
		case "pane.report_agent":
			return `{"id":"","error":{"code":"invalid_request","message":"invalid request: unknown variant done"}}`
		case "pane.list":
			return `{"id":"someone-else","result":{"type":"pane_list","panes":[]}}`
		case "agent.list":
			return `{"id":"` + req["id"].(string) + `","result":{"type":"pane_list","panes":[]}}`
		}
		return ""
	})
	c := New(path, WithTimeout(300*time.Millisecond))
	ctx := context.Background()

	_, err := c.Pane(ctx, "w9:p9")
	var apiErr *APIError
	if !errors.Is(err, ErrPaneNotFound) || !errors.As(err, &apiErr) || apiErr.Message != "pane w9:p9 not found" {
		t.Errorf("Pane = %v, want ErrPaneNotFound with herdr's message", err)
	}
	if errors.Is(err, ErrAgentNotFound) {
		t.Errorf("Pane error %v matches ErrAgentNotFound", err)
	}
	if _, err := c.Prompt(ctx, PromptRequest{Target: "w1:p1", Text: "x"}); !errors.Is(err, ErrAgentNotReady) {
		t.Errorf("Prompt = %v, want ErrAgentNotReady", err)
	}
	err = c.ReportAgent(ctx, ReportAgentRequest{PaneID: "w1:p1", Source: "s", Agent: "claude", State: StatusDone})
	if !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("ReportAgent = %v, want ErrInvalidRequest (empty-id error line)", err)
	}
	if _, err := c.Panes(ctx, ""); !errors.Is(err, ErrBadResponse) {
		t.Errorf("Panes with a foreign id = %v, want ErrBadResponse", err)
	}
	if _, err := c.Agents(ctx); !errors.Is(err, ErrBadResponse) {
		t.Errorf("Agents with the wrong result type = %v, want ErrBadResponse", err)
	}
	start := time.Now()
	if _, err := c.Snapshot(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Snapshot from a silent server = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("default deadline took %v, want about 300ms", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Snapshot(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot cancelled = %v, want context.Canceled", err)
	}
}

func TestDialFailureIsNotRunning(t *testing.T) {
	c := New(filepath.Join(t.TempDir(), "absent.sock"))
	if _, err := c.Ping(context.Background()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Ping without a server = %v, want ErrNotRunning", err)
	}
	if _, err := c.Subscribe(context.Background(), Lifecycle(EventPaneCreated)); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Subscribe without a server = %v, want ErrNotRunning", err)
	}
}

func TestTimerTimesEachCallToItsEnd(t *testing.T) {
	const slow = 30 * time.Millisecond
	path := lineServer(t, func(req map[string]any) string {
		id := req["id"].(string)
		switch req["method"] {
		case "pane.read":
			time.Sleep(slow)
			return `{"id":"` + id + `","result":{"type":"pane_read","read":{"pane_id":"w1:p1","workspace_id":"w1","tab_id":"w1:t1","source":"visible","format":"text","text":"hi","truncated":false}}}`
		case "ping":
			return `{"id":"` + id + `","result":{"type":"pong","version":"0.7.0","protocol":20,"capabilities":null}}`
		}
		return "" // never answered: the call times out
	})
	var (
		mu   sync.Mutex
		took = map[string][]time.Duration{}
	)
	c := New(path, WithTimeout(200*time.Millisecond), WithTimer(func(method string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		took[method] = append(took[method], d)
	}))
	ctx := context.Background()
	if _, err := c.Read(ctx, ReadRequest{PaneID: "w1:p1", Source: SourceVisible}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pane(ctx, "w1:p1"); err == nil {
		t.Fatal("a call herdr never answers succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if d := took["pane.read"]; len(d) != 1 || d[0] < slow {
		t.Errorf("pane.read timed %v, want one time of at least %v (the answer's wait)", d, slow)
	}
	if d := took["ping"]; len(d) != 1 {
		t.Errorf("ping timed %v, want once", d)
	}
	// A call that failed is timed too: to its deadline.
	if d := took["pane.get"]; len(d) != 1 || d[0] < 200*time.Millisecond {
		t.Errorf("pane.get timed %v, want one time of at least its 200ms timeout", d)
	}
}
