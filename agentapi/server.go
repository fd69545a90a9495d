package agentapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is one agent to run under `agentapi server`.
type Config struct {
	// Bin is the agentapi binary; "" finds "agentapi" on PATH.
	Bin string
	// Program and Args are the agent's command line (agentapi runs it
	// directly in its terminal, no shell).
	Program string
	Args    []string
	// Type is agentapi's --type ("claude", "codex", "gemini", "opencode",
	// "custom", …); "" lets agentapi guess from Program's name, and an
	// unknown name is "custom". It picks how agentapi spots the prompt box
	// (its readiness) and cuts replies from the screen.
	Type string
	// Dir is the working directory of agentapi and so of the agent.
	Dir string
	// Env is the environment of agentapi and the agent; nil means this
	// process's. AGENTAPI_* variables are dropped from it either way:
	// agentapi reads its flags from them (an AGENTAPI_INITIAL_PROMPT would
	// type a prompt behind the caller's back). agentapi sets TERM=vt100
	// for the agent itself.
	Env []string
	// Width and Height are the emulated terminal's size; 0 keeps
	// agentapi's default of 80×1000 (a tall screen never scrolls, which
	// agentapi's reply cutting wants; every screen read is then ~100 KB).
	Width, Height int
	// Port is the first port to try; 0 picks a free one. A port that is
	// taken is replaced by a free one, up to Attempts launches in all.
	Port     int
	Attempts int
	// StartTimeout bounds the wait for the API to answer; default 30 s.
	StartTimeout time.Duration
	// Output, when set, gets a copy of agentapi's stdout and stderr (its
	// log; the agent's last screen when the agent exits with an error).
	Output io.Writer
}

func (c *Config) setDefaults() {
	if c.Attempts == 0 {
		c.Attempts = 5
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
}

// Validate reports every problem with the config at once.
func (c Config) Validate() error {
	var errs []error
	if c.Program == "" {
		errs = append(errs, errors.New("no program to run"))
	}
	// agentapi's own bounds: it refuses a terminal under 10×10.
	if c.Width != 0 && (c.Width < 10 || c.Width > 65535) {
		errs = append(errs, fmt.Errorf("width %d: want 10…65535", c.Width))
	}
	if c.Height != 0 && (c.Height < 10 || c.Height > 65535) {
		errs = append(errs, fmt.Errorf("height %d: want 10…65535", c.Height))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d: want 0…65535", c.Port))
	}
	if c.Attempts < 0 {
		errs = append(errs, fmt.Errorf("attempts %d: must not be negative", c.Attempts))
	}
	return errors.Join(errs...)
}

// Server is a running `agentapi server` and, below it, its agent.
type Server struct {
	client  *Client
	cmd     *exec.Cmd
	port    int
	version string
	out     *tail

	done    chan struct{}
	waitErr error // set before done closes

	mu       sync.Mutex
	agentPID int // found on first use
	stopped  bool
}

// Start launches agentapi for cfg and returns once its API answers. It
// fails with ErrNotInstalled or ErrVersion before running anything, with
// ErrPortTaken when every attempt found its port taken, and with ErrExited
// when agentapi (or the agent, which it starts first) exits during start.
// ctx bounds only the start: the server runs until Stop, or until its
// agent exits.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agentapi config: %w", err)
	}
	bin, err := LookPath(cfg.Bin)
	if err != nil {
		return nil, err
	}
	version, err := CheckVersion(ctx, bin)
	if err != nil {
		return nil, err
	}
	var errs []error
	port := cfg.Port
	for range cfg.Attempts {
		// agentapi starts the agent before it binds its port, so a port
		// found taken only by agentapi costs an agent start (and a Claude
		// Code SessionStart hook of a session that dies at once): test
		// the port here first.
		if port == 0 || !portFree(port) {
			if port, err = freePort(); err != nil {
				return nil, fmt.Errorf("agentapi: pick a port: %w", err)
			}
		}
		s, err := launch(ctx, cfg, bin, version, port)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, ErrPortTaken) {
			return nil, err
		}
		errs = append(errs, err)
		port = 0
	}
	return nil, fmt.Errorf("agentapi: %d attempts: %w", cfg.Attempts, errors.Join(errs...))
}

// freePort asks the kernel for a free port on all interfaces, where
// agentapi listens (it has no flag for the address; see docs/agentapi.md).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether agentapi could bind port right now. A
// variable so a test can skip the check and make agentapi meet a taken
// port itself.
var portFree = func(port int) bool {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

func launch(ctx context.Context, cfg Config, bin, version string, port int) (*Server, error) {
	args := []string{"server", "--port", strconv.Itoa(port)}
	if cfg.Type != "" {
		args = append(args, "--type", cfg.Type)
	}
	if cfg.Width != 0 {
		args = append(args, "--term-width", strconv.Itoa(cfg.Width))
	}
	if cfg.Height != 0 {
		args = append(args, "--term-height", strconv.Itoa(cfg.Height))
	}
	args = append(append(args, "--", cfg.Program), cfg.Args...)

	// Not CommandContext: ctx bounds the start, not the server's life.
	cmd := exec.Command(bin, args...)
	cmd.Dir = cfg.Dir
	cmd.Env = withoutAgentapiVars(cfg.Env)
	// Stdin stays nil (/dev/null): agentapi reads a piped stdin to its end
	// as the initial prompt before it starts anything.
	out := &tail{max: 64 << 10}
	var w io.Writer = out
	if cfg.Output != nil {
		w = io.MultiWriter(out, cfg.Output)
	}
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group: a Ctrl-C at the caller's terminal is the
	// caller's to handle, not a signal to every agent of the fleet.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("agentapi: start %s: %w", bin, err)
	}
	s := &Server{
		client:  NewClient("http://127.0.0.1:"+strconv.Itoa(port), nil),
		cmd:     cmd,
		port:    port,
		version: version,
		out:     out,
		done:    make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitListening(ctx, cfg.StartTimeout); err != nil {
		s.kill()
		<-s.done
		return nil, err
	}
	return s, nil
}

// waitListening polls GET /status until this process answers it.
func (s *Server) waitListening(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			if strings.Contains(s.out.String(), "address already in use") {
				return fmt.Errorf("%w: port %d: %s", ErrPortTaken, s.port, s.out.last(3))
			}
			return s.exitError("during start")
		case <-ctx.Done():
			return fmt.Errorf("agentapi: port %d did not answer within %v: %w; output: %s", s.port, timeout, ctx.Err(), s.out.last(10))
		case <-tick.C:
		}
		if _, err := s.client.Status(ctx); err != nil {
			continue
		}
		// Something answers on the port: make sure it is this process
		// and not another server that took the port in between (ours
		// then exits with "address already in use" a moment later).
		select {
		case <-s.done:
			continue // the exit is handled above
		default:
		}
		owned, known := listensOn(s.cmd.Process.Pid, s.port)
		switch {
		case owned:
			return nil
		case !known && !procReadable():
			return nil // no /proc to ask: take the answer as this process's
		}
		// Not this process's listener, or its /proc entries already
		// gone: it is exiting (a port another server holds), and its
		// exit is handled above. Before, an entry gone between the
		// answer and the look was taken as ownership of the other
		// server's port.
	}
}

// Client is the server's API client.
func (s *Server) Client() *Client { return s.client }

// URL is the server's base URL, on the loopback address.
func (s *Server) URL() string { return s.client.URL() }

// Port is the port agentapi listens on (on all interfaces).
func (s *Server) Port() int { return s.port }

// Version is the version agentapi reported.
func (s *Server) Version() string { return s.version }

// PID is agentapi's process id (its own process group's too).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Done is closed once agentapi has exited. agentapi exits when its agent
// does (within ~50 ms, measured), so this is also the agent's death.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is nil while agentapi runs; once it exited, an error wrapping
// ErrExited with its exit status and the end of its output (agentapi
// prints the agent's last screen there when the agent failed).
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.exitError("")
	default:
		return nil
	}
}

// ExitCode is agentapi's exit code once it exited (-1 for a signal), or
// -1 while it runs. agentapi exits 1 when its agent exited non-zero or
// was killed, 0 when the agent exited 0 or agentapi was stopped cleanly.
func (s *Server) ExitCode() int {
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

func (s *Server) exitError(when string) error {
	st := "exited"
	if s.waitErr != nil {
		st = s.waitErr.Error()
	}
	s.mu.Lock()
	if s.stopped {
		st += " after Stop"
	}
	s.mu.Unlock()
	if when != "" {
		st += " " + when
	}
	return fmt.Errorf("%w (pid %d, port %d): %s; output: %s", ErrExited, s.PID(), s.port, st, s.out.last(15))
}

// Stop ends agentapi and its agent: SIGTERM to agentapi, which sends the
// agent SIGINT and kills it 5 s later if it is still there; if agentapi
// has not exited when ctx ends (default 10 s), SIGKILL to agentapi and
// the agent's process group. It waits for agentapi to exit and is
// idempotent. Claude Code's SessionEnd hook may or may not run.
func (s *Server) Stop(ctx context.Context) error {
	ctx, cancel := withDefault(ctx, 10*time.Second)
	defer cancel()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	agent, _ := s.AgentPID() // before agentapi goes, while it is still the agent's parent
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-ctx.Done():
		s.kill()
		if agent > 0 {
			// The agent leads its own session and group (agentapi
			// starts it on a new terminal).
			_ = syscall.Kill(-agent, syscall.SIGKILL)
		}
		<-s.done
	}
	return nil
}

// Close is Stop with the default timeout.
func (s *Server) Close() error { return s.Stop(context.Background()) }

// kill SIGKILLs agentapi's process group: agentapi, not the agent, which
// is in a session of its own and gets SIGHUP when agentapi's end of its
// terminal closes.
func (s *Server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// withoutAgentapiVars returns env (nil: os.Environ) without AGENTAPI_*.
func withoutAgentapiVars(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AGENTAPI_") {
			out = append(out, kv)
		}
	}
	return out
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// last returns the last n non-blank lines, joined with " | ".
func (t *tail) last(n int) string {
	var keep []string
	lines := strings.Split(t.String(), "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	if len(keep) == 0 {
		return "(none)"
	}
	return strings.Join(keep, " | ")
}
