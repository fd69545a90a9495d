package herdrtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
)

// roundTrip sends raw on a fresh connection and returns everything the
// server wrote before closing it.
func roundTrip(t *testing.T, path, raw string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read after %q: %v", raw, err)
	}
	return string(out)
}

type collected struct {
	mu   sync.Mutex
	errs []error
}

func (c *collected) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

func (c *collected) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.errs)
}

func TestEnvelopeErrors(t *testing.T) {
	var bad collected
	s := Start(t, Config{Validator: herdrschema.Schema(t), OnInvalid: bad.add})
	tests := []struct {
		name, req, want string
		schemaInvalid   bool
	}{
		{"bad JSON has an empty id", `{nope`, `{"id":"","error":{"code":"invalid_request"`, true},
		{"numeric id has an empty id", `{"id":7,"method":"ping","params":{}}`, `{"id":"","error":{"code":"invalid_request"`, true},
		{"missing params is invalid", `{"id":"a","method":"ping"}`, `{"id":"","error":{"code":"invalid_request"`, true},
		{"missing required param is invalid", `{"id":"b","method":"pane.get","params":{}}`, `{"id":"","error":{"code":"invalid_request"`, true},
		{"report_agent state done is invalid", `{"id":"c","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"claude","state":"done"}}`, `{"id":"","error":{"code":"invalid_request"`, true},
		{"unknown pane keeps the id", `{"id":"d","method":"pane.get","params":{"pane_id":"w9:p9"}}`, `{"id":"d","error":{"code":"pane_not_found"`, false},
		{"unknown fields are ignored", `{"id":"e","method":"ping","params":{"extra":1}}`, `{"id":"e","result":{`, false},
		{"unimplemented method says so", `{"id":"f","method":"worktree.list","params":{}}`, `{"id":"f","error":{"code":"not_implemented"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := bad.count()
			got := roundTrip(t, s.Path(), tt.req+"\n")
			if !strings.HasPrefix(got, tt.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("answer %q, want one line starting %s", got, tt.want)
			}
			if flagged := bad.count() > before; flagged != tt.schemaInvalid {
				t.Errorf("schema flagged the request: %v, want %v", flagged, tt.schemaInvalid)
			}
		})
	}
}

func TestConnectionLimits(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t), FirstLineTimeout: 200 * time.Millisecond})
	t.Run("a blank line closes without an answer", func(t *testing.T) {
		if got := roundTrip(t, s.Path(), "\n"); got != "" {
			t.Errorf("answer %q, want none", got)
		}
	})
	t.Run("silence closes after the first-line timeout", func(t *testing.T) {
		start := time.Now()
		if got := roundTrip(t, s.Path(), ""); got != "" || time.Since(start) > 5*time.Second {
			t.Errorf("answer %q after %v, want none after ~200ms", got, time.Since(start))
		}
	})
	t.Run("over 1 MiB is refused", func(t *testing.T) {
		got := roundTrip(t, s.Path(), strings.Repeat("x", maxRequestBytes+10))
		if !strings.HasPrefix(got, `{"id":"","error":{"code":"invalid_request"`) {
			t.Errorf("answer %q, want invalid_request", got)
		}
	})
	t.Run("one request per connection", func(t *testing.T) {
		got := roundTrip(t, s.Path(), `{"id":"1","method":"ping","params":{}}`+"\n"+`{"id":"2","method":"ping","params":{}}`+"\n")
		if strings.Count(got, "\n") != 1 || !strings.Contains(got, `"id":"1"`) {
			t.Errorf("answers %q, want only the first request's", got)
		}
	})
	t.Run("the socket is private", func(t *testing.T) {
		fi, err := os.Stat(s.Path())
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket mode %v, %v; want 0600", fi.Mode().Perm(), err)
		}
	})
}

// subscribeRaw opens a subscription and returns a line reader after the ack.
func subscribeRaw(t *testing.T, path string, subs string) (*bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, `{"id":"sub","method":"events.subscribe","params":{"subscriptions":%s}}`+"\n", subs)
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	ack, err := br.ReadString('\n')
	if err != nil || ack != `{"id":"sub","result":{"type":"subscription_started"}}`+"\n" {
		t.Fatalf("ack %q, %v", ack, err)
	}
	return br, c
}

func TestSubscriptionEntryEmitsOncePerPoll(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t), PollInterval: 50 * time.Millisecond})
	for range 6 {
		if _, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{"sleep", "30"}}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	br, c := subscribeRaw(t, s.Path(), `[{"type":"pane.created"}]`)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 6 {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, `{"event":"pane_created","data":{`) {
			t.Fatalf("replayed line %d = %q, %v", i, line, err)
		}
	}
	// Six replayed events through one entry take five poll gaps.
	if d := time.Since(start); d < 5*50*time.Millisecond {
		t.Errorf("replay of 6 events took %v, want ≥250ms at one event per 50ms poll", d)
	}
}

func TestStatusSubscriptionGoesSilentWhenThePaneDies(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t), PollInterval: 20 * time.Millisecond, DetectInterval: 20 * time.Millisecond})
	p, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{"env", "HERDR_AGENT=claude", "sh", "-c", "read x"}})
	if err != nil {
		t.Fatal(err)
	}
	br, c := subscribeRaw(t, s.Path(), `[{"type":"pane.agent_status_changed","pane_id":"`+p.ID+`","agent_status":"idle"},{"type":"pane.closed"}]`)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, `{"event":"pane.agent_status_changed","data":{"pane_id":"`+p.ID+`"`) {
		t.Fatalf("first line %q, %v; want the idle status", line, err)
	}
	// The filter yields the idle line whether detection finished before
	// or after subscribing. pane_closed arrives once the process ends; the
	// status entry adds nothing more, and the stream stays open.
	s.mu.Lock()
	pn := s.panes[p.ID]
	s.mu.Unlock()
	s.write(pn, []byte("\r"))
	for {
		line, err = br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		if strings.HasPrefix(line, `{"event":"pane_closed"`) {
			break
		}
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if line, err := br.ReadString('\n'); !isTimeout(err) {
		t.Errorf("after the pane died got %q, %v; want silence", line, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestHubKeepsTheLast512Events(t *testing.T) {
	var h hub
	for i := range 600 {
		h.add(eventData{Type: "pane_focused", PaneID: fmt.Sprint(i)})
	}
	got := h.since(0)
	if len(got) != hubSize || got[0].data.PaneID != "88" || got[0].seq != 88 {
		t.Errorf("retained %d events starting at %+v, want 512 starting at 88", len(got), got[0])
	}
	if rest := h.since(598); len(rest) != 2 {
		t.Errorf("since(598) = %d events, want 2", len(rest))
	}
	var env map[string]any
	if err := json.Unmarshal(got[0].line, &env); err != nil || env["event"] != "pane_focused" {
		t.Errorf("line %s, %v", got[0].line, err)
	}
}

func TestEncodeKey(t *testing.T) {
	tests := []struct{ name, want string }{
		{"enter", "\r"}, {"Return", "\r"}, {"ESC", "\x1b"}, {"tab", "\t"}, {"shift+tab", "\x1b[Z"},
		{"backspace", "\x7f"}, {"up", "\x1b[A"}, {"left", "\x1b[D"}, {"space", " "}, {"f1", "\x1bOP"},
		{"F12", "\x1b[24~"}, {"ctrl+c", "\x03"}, {"C-c", "\x03"}, {"Ctrl+A", "\x01"}, {"alt+x", "\x1bx"},
		{"minus", "-"}, {"plus", "+"}, {"+", "+"}, {"A", "A"}, {"é", "é"},
	}
	for _, tt := range tests {
		if got, err := encodeKey(tt.name); err != nil || got != tt.want {
			t.Errorf("encodeKey(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{"prefix+c", "prefix", "ctrl+", "ctrl+enterx", "hyper+x", "", "\x01", "f13"} {
		if got, err := encodeKey(bad); err == nil {
			t.Errorf("encodeKey(%q) = %q, want an error", bad, got)
		}
	}
}

func TestTerminalTracksModesAcrossChunks(t *testing.T) {
	term := newTerminal(80, 24, 1<<20)
	for _, chunk := range []string{"\x1b[?20", "04h\x1b]0;⠋ wor", "king; step 2\x07line one\r\n", "spinner 1\rspinner 2\r\n", "\x1b[1;31mred\x1b[0m\r\n", "ab\bc\r\n"} {
		term.write([]byte(chunk))
	}
	if !term.bracketed || term.title != "⠋ working; step 2" {
		t.Errorf("bracketed %v title %q, want true and %q", term.bracketed, term.title, "⠋ working; step 2")
	}
	if rows := term.screen(false); fmt.Sprint(rows[:5]) != fmt.Sprint([]string{"line one", "spinner 2", "red", "ac", ""}) {
		t.Errorf("screen = %q", rows)
	}
	term.write([]byte("\x1b[?1049;2004l\x1b]2;plain\x1b\\"))
	if term.bracketed || term.title != "plain" {
		t.Errorf("after reset: bracketed %v title %q", term.bracketed, term.title)
	}
	if rows := term.screen(true); !strings.Contains(rows[2], "\x1b[") || !strings.Contains(rows[2], "red") {
		t.Errorf("ansi row %q lost its style", rows[2])
	}
}

func TestValidator(t *testing.T) {
	v := herdrschema.Schema(t)
	if err := v.ValidateRequest([]byte(`{"id":"1","method":"pane.send_keys","params":{"pane_id":"w1:p1","keys":["enter"]}}`)); err != nil {
		t.Errorf("valid request rejected: %v", err)
	}
	if err := v.ValidateRequest([]byte(`{"id":"1","method":"pane.send_keys","params":{"pane_id":"w1:p1"}}`)); err == nil || !strings.Contains(err.Error(), "keys") {
		t.Errorf("request without keys: %v, want an error naming keys", err)
	}
	if err := v.ValidateEvent([]byte(`{"event":"pane_exited","data":{"type":"pane_exited","pane_id":"w1:p1"}}`)); err == nil {
		t.Error("lifecycle event without workspace_id accepted")
	}
	if err := v.ValidateEvent([]byte(`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p1","workspace_id":"w1","agent_status":"done"}}`)); err != nil {
		t.Errorf("valid subscription event rejected: %v", err)
	}
	if err := v.ValidateResponse([]byte(`{"id":"x","error":{"code":"timeout"}}`)); err == nil {
		t.Error("error response without message accepted")
	}
}

func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	s := Start(t, Config{Validator: herdrschema.Schema(t)})
	ctx := context.Background()
	p, err := s.SpawnPane(ctx, PaneSpec{Argv: []string{"sh", "-c", "trap '' HUP; sleep 30"}}) // ignores SIGHUP
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SpawnPane(ctx, PaneSpec{Argv: []string{"sleep", "30"}}); err != nil {
		t.Fatal(err)
	}
	subscribeRaw(t, s.Path(), `[{"type":"pane.created"}]`)
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := syscall.Kill(p.PID, 0); err == nil {
		t.Errorf("pane process %d survived Close", p.PID)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// A pane's shell runs a typed command as a job of its own process group,
// the terminal's foreground. Close ends such a job too, even one that
// ignores SIGHUP (anything started under nohup does), and a pane that
// SIGHUP does not end holds up no other: what is left is killed together
// after KillGrace. Under nohup, Close once waited here for ever: the
// job held the terminal after its shell was gone, and the panes after it
// were never killed.
func TestCloseEndsAForegroundJobThatIgnoresHangUps(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t)})
	ctx := context.Background()
	sh, err := s.SpawnPane(ctx, PaneSpec{Argv: []string{"sh", "-i"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.SpawnPane(ctx, PaneSpec{Argv: []string{"sh", "-c", "trap '' HUP; sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	p := s.panes[sh.ID]
	s.mu.Unlock()
	if err := s.write(p, []byte("sh -c 'trap \"\" HUP; exec sleep 60'\r")); err != nil {
		t.Fatal(err)
	}
	// The job counts once it is sleep: it has set its trap, so a hang-up
	// alone cannot end it (before, the test passed whenever the hang-up
	// came first).
	job := 0
	for deadline := time.Now().Add(10 * time.Second); job == 0; time.Sleep(20 * time.Millisecond) {
		if fg := p.tty.Foreground(); fg > 0 && fg != sh.PID && comm(fg) == "sleep" {
			job = fg
		} else if time.Now().After(deadline) {
			t.Fatalf("the typed job never took the terminal's foreground; screen:\n%s", s.Output(sh.ID))
		}
	}

	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waits after 30 s: the job holds its pane")
	}
	// The job leads its group. Orphaned, it may stay a zombie until
	// whoever adopted it reaps it: only a running process counts.
	if alive(job) {
		t.Errorf("the job %d survived Close", job)
	}
	if alive(other.PID) {
		t.Errorf("the other pane's process %d survived Close", other.PID)
	}
}

// comm is the command name of process pid, or "".
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
