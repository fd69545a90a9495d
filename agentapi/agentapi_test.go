package agentapi_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// start runs cfg under the real agentapi and stops it when the test ends.
func start(t *testing.T, cfg agentapi.Config) *agentapi.Server {
	t.Helper()
	requireAgentapi(t)
	if testing.Verbose() {
		cfg.Output = testWriter{t}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := agentapi.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start agentapi: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fakeAgentConfig runs this test binary as fakeAgent.
func fakeAgentConfig(t *testing.T) agentapi.Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return agentapi.Config{Program: exe, Type: "custom", Env: append(os.Environ(), "FAKE_AGENT=1"), Width: 100, Height: 40}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("agentapi: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitStatus reads events until the status is want.
func waitStatus(t *testing.T, ev *agentapi.Stream, want agentapi.Status, within time.Duration) {
	t.Helper()
	deadline := time.AfterFunc(within, func() { _ = ev.Close() })
	defer deadline.Stop()
	for {
		e, err := ev.Next()
		if err != nil {
			t.Fatalf("waiting for status %s: %v", want, err)
		}
		if e.Type == agentapi.EventStatus && e.Status == want {
			return
		}
	}
}

func screenHas(t *testing.T, c *agentapi.Client, want string, n int) {
	t.Helper()
	checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		s, err := c.Screen(t.Context())
		if err != nil {
			return err
		}
		if got := strings.Count(s, want); got < n {
			return errors.New("screen holds " + strconv.Itoa(got) + " of " + strconv.Itoa(n) + " " + strconv.Quote(want) + ":\n" + lastRows(s, 12))
		}
		return nil
	})
}

func lastRows(screen string, n int) string {
	rows := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	if len(rows) > n {
		rows = rows[len(rows)-n:]
	}
	return strings.Join(rows, "\n")
}

func TestAUserMessageIsTypedAndTheStatusSettles(t *testing.T) {
	s := start(t, fakeAgentConfig(t))
	c := s.Client()
	ev, err := c.Events(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	waitStatus(t, ev, agentapi.StatusStable, 20*time.Second)
	screenHas(t, c, "fake agent ready", 1)

	if err := c.Send(t.Context(), "  hello CANARY1  "); err != nil {
		t.Fatalf("send: %v", err)
	}
	waitStatus(t, ev, agentapi.StatusRunning, 5*time.Second)
	waitStatus(t, ev, agentapi.StatusStable, 10*time.Second)
	// agentapi trims the text before it types it.
	screenHas(t, c, "ECHO: hello CANARY1", 1)
	msgs, err := c.Messages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 3 || msgs[1].Role != "user" || msgs[1].Content != "hello CANARY1" || !strings.Contains(msgs[2].Content, "ECHO: hello CANARY1") {
		t.Errorf("messages = %+v, want the trimmed user message and the echo after it", msgs)
	}

	// A user message while the agent works is refused, and nothing is typed.
	if err := c.Send(t.Context(), "busy 3s"); err != nil {
		t.Fatalf("send busy: %v", err)
	}
	err = c.Send(t.Context(), "second CANARY2")
	if !errors.Is(err, agentapi.ErrBusy) {
		t.Fatalf("send while busy: err = %v, want ErrBusy", err)
	}
	waitStatus(t, ev, agentapi.StatusStable, 15*time.Second)
	if scr, _ := c.Screen(t.Context()); strings.Contains(scr, "CANARY2") {
		t.Errorf("the refused message reached the terminal:\n%s", lastRows(scr, 10))
	}
	if err := c.Send(t.Context(), ""); !errors.Is(err, agentapi.ErrInvalidMessage) {
		t.Errorf("empty message: err = %v, want ErrInvalidMessage", err)
	}
}

func TestRawInputReachesTheTerminalAsItIs(t *testing.T) {
	s := start(t, agentapi.Config{Program: "cat", Width: 80, Height: 20})
	c := s.Client()
	if err := c.SendRaw(t.Context(), "raw CANARY3\r"); err != nil {
		t.Fatal(err)
	}
	// Once echoed by the terminal, once written back by cat.
	screenHas(t, c, "raw CANARY3", 2)

	// cat draws no prompt box, so agentapi never calls it stable.
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != agentapi.StatusRunning || st.AgentType != "custom" || st.Transport != "pty" {
		t.Errorf("status = %+v, want running, custom, pty", st)
	}

	pid, err := s.AgentPID()
	if err != nil {
		t.Fatal(err)
	}
	fg, comm, err := s.Foreground()
	if err != nil {
		t.Fatal(err)
	}
	if fg != pid || comm != "cat" {
		t.Errorf("foreground = %d %q, want the agent %d \"cat\"", fg, comm, pid)
	}
}

func TestTheAgentsExitEndsTheServer(t *testing.T) {
	s := start(t, fakeAgentConfig(t))
	ev, err := s.Client().Events(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	agent, err := s.AgentPID()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := s.Client().SendRaw(t.Context(), "exit 3\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("agentapi still runs 10 s after its agent exited")
	}
	t.Logf("agentapi exited %v after the exit was typed", time.Since(t0).Round(time.Millisecond))
	if err := s.Err(); !errors.Is(err, agentapi.ErrExited) {
		t.Errorf("Err = %v, want ErrExited", err)
	}
	if got := s.ExitCode(); got != 1 {
		t.Errorf("exit code = %d, want agentapi's 1 for an agent that exited non-zero", got)
	}
	for {
		_, err := ev.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			t.Errorf("events after the exit: %v, want io.EOF", err)
		}
		break
	}
	if syscall.Kill(agent, 0) == nil {
		t.Errorf("agent %d still runs", agent)
	}
}

func TestATakenPortIsReplaced(t *testing.T) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	cfg := fakeAgentConfig(t)
	cfg.Port = taken
	s := start(t, cfg)
	if s.Port() == taken {
		t.Fatalf("agentapi got port %d, which was taken", taken)
	}
	if _, err := s.Client().Status(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestStopEndsAgentapiAndItsAgent(t *testing.T) {
	s := start(t, agentapi.Config{Program: "cat", Width: 80, Height: 20})
	agent, err := s.AgentPID()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(t0).Round(time.Millisecond))
	select {
	case <-s.Done():
	default:
		t.Fatal("Stop returned before agentapi exited")
	}
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		if syscall.Kill(agent, 0) == nil {
			return errors.New("agent " + strconv.Itoa(agent) + " still runs")
		}
		return nil
	})
	if err := s.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestAMissingBinaryIsAClearError(t *testing.T) {
	_, err := agentapi.Start(t.Context(), agentapi.Config{Bin: filepath.Join(t.TempDir(), "agentapi"), Program: "cat"})
	if !errors.Is(err, agentapi.ErrNotInstalled) || !strings.Contains(err.Error(), "install-agentapi.sh") {
		t.Errorf("err = %v, want ErrNotInstalled saying how to install it", err)
	}
}

func TestAnOldVersionIsRefused(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the stand-in agentapi script")
	}
	bin := filepath.Join(t.TempDir(), "agentapi")
	script := "#!/bin/sh\necho 'agentapi version 0.2.3'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := agentapi.Start(t.Context(), agentapi.Config{Bin: bin, Program: "cat"})
	if !errors.Is(err, agentapi.ErrVersion) || !strings.Contains(err.Error(), "0.2.3") {
		t.Errorf("err = %v, want ErrVersion naming 0.2.3", err)
	}
}

func TestTheRealBinaryReportsASupportedVersion(t *testing.T) {
	bin := requireAgentapi(t)
	v, err := agentapi.CheckVersion(t.Context(), bin)
	if err != nil {
		t.Fatal(err)
	}
	if v != agentapi.TestedVersion {
		t.Logf("agentapi %s, measured with %s", v, agentapi.TestedVersion)
	}
}

// TestAPortAgentapiCannotBindIsReplaced takes the port with another HTTP
// server that answers GET /status as agentapi would: Start must not take
// that server for its own (agentapi fails to bind, exits, and Start
// tries another port).
func TestAPortAgentapiCannotBindIsReplaced(t *testing.T) {
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"stable","agent_type":"claude","transport":"pty"}`)
	})}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = impostor.Serve(ln) }()
	defer impostor.Close()
	taken := ln.Addr().(*net.TCPAddr).Port

	defer agentapi.SkipPortCheck()()
	cfg := fakeAgentConfig(t)
	cfg.Port = taken
	s := start(t, cfg)
	if s.Port() == taken {
		t.Fatalf("Start settled on port %d, held by another server", taken)
	}
	st, err := s.Client().Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.AgentType != "custom" {
		t.Errorf("status = %+v, want the fake agent's server (custom)", st)
	}
}
