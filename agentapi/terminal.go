package agentapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// HostSocket is the name, in fleetd's data directory, of the socket
// `fleetd up --runtime agentapi` serves its agentapi host on.
const HostSocket = "agentapi-host.sock"

// TerminalConfig is a pane's program to run under its own agentapi
// server: what a herdr-protocol server (herdrtest.Config.Start) gives a
// pane.
type TerminalConfig struct {
	// Bin is the agentapi binary; "" finds it on PATH.
	Bin string
	// Argv is the pane's program: its shell, into which fleetd types the
	// agent's launch line as it does into a herdr pane.
	Argv []string
	// Env is the program's whole environment, Dir its working directory.
	Env []string
	Dir string
	// Cols and Rows are the terminal's size (agentapi's -W and -H).
	Cols, Rows int
	// Output gets agentapi's log, when set.
	Output io.Writer
}

// Terminal is a program running under an agentapi server, seen as a
// terminal: its output is agentapi's screen, redrawn whole at each change
// (agentapi shows nothing else of the terminal: no bytes, no title, no
// modes), its input agentapi's raw message, written as it is. It
// implements herdrtest.Terminal.
//
// agentapi does not say which modes the program turned on. The one the
// engine depends on is bracketed paste (a paste into an agent is framed,
// a launch line typed into the shell is not), so the screen carries it
// as the terminal's foreground says it: on while a process group other
// than the pane's shell holds the terminal (every agent CLI fleetd drives
// turns it on), off while the shell does (sh does not).
type Terminal struct {
	srv    *Server
	pr     *io.PipeReader
	pw     *io.PipeWriter
	cancel context.CancelFunc
	pumped chan struct{}

	mu     sync.Mutex
	closed bool
}

// screenLag bounds how far agentapi's screen lags its terminal: it
// samples the screen every 25 ms (its snapshotInterval), each sample
// waiting until the program has not drawn for 16 ms, at most 48 ms
// (termexec.ReadScreen).
const screenLag = 25*time.Millisecond + 48*time.Millisecond + 7*time.Millisecond

// StartTerminal starts cfg's program under a new agentapi server on a
// free port and returns once its API answers; ctx bounds the start only.
func StartTerminal(ctx context.Context, cfg TerminalConfig) (*Terminal, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("agentapi: no program to run")
	}
	// agentapi's own environment holds none of the pane's HERDR_*
	// variables, its program gets them through env(1): a process that has
	// them is the pane's, which is how fleetd finds a pane's shell in
	// /proc (and so sees the agent's end), as in a herdr pane.
	envBin, err := exec.LookPath("env")
	if err != nil {
		return nil, fmt.Errorf("agentapi: env(1) to start the pane's program with: %w", err)
	}
	var own, pane []string
	for _, kv := range cfg.Env {
		if strings.HasPrefix(kv, "HERDR_") {
			pane = append(pane, kv)
		} else {
			own = append(own, kv)
		}
	}
	srv, err := Start(ctx, Config{
		Bin: cfg.Bin, Program: envBin, Args: append(pane, cfg.Argv...), Env: own,
		// "custom": agentapi's generic prompt detector and reply cutting;
		// neither is used (fleetd reads the screen and the agent's hooks).
		Type: "custom", Dir: cfg.Dir, Width: cfg.Cols, Height: cfg.Rows, Output: cfg.Output,
	})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	t := &Terminal{srv: srv, pr: pr, pw: pw, cancel: cancel, pumped: make(chan struct{})}
	go t.pump(pctx)
	return t, nil
}

// Server is the agentapi server the program runs under.
func (t *Terminal) Server() *Server { return t.srv }

// Read returns the screen's redraws; io.EOF once agentapi exited and its
// last screen was read.
func (t *Terminal) Read(p []byte) (int, error) { return t.pr.Read(p) }

// Write sends p as one raw input message: agentapi writes it to the
// terminal at once, whatever its status.
func (t *Terminal) Write(p []byte) (int, error) {
	select {
	case <-t.srv.Done():
		return 0, t.srv.Err()
	default:
	}
	if err := t.srv.Client().SendRaw(context.Background(), string(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Sync implements herdrtest.Syncer: it returns once agentapi has sampled
// its terminal after the call and the pane's reader has taken the screen
// the pump wrote of it. Without it a read right after an agent's hook
// reported could show the screen from before the hook ran: Gemini's
// SessionStart hook of a resumed session reported while the screen still
// showed its empty composer, drawn before the hook's "Executing Hook" row
// and before Gemini cleared the screen to resume, and a prompt typed then
// was lost.
func (t *Terminal) Sync(ctx context.Context) error {
	select {
	case <-time.After(screenLag):
	case <-ctx.Done():
		return ctx.Err()
	case <-t.srv.Done():
		return nil
	}
	// An empty write is a barrier: io.Pipe hands it to the reader as a
	// read of nothing, after every screen the pump wrote before it (pipe
	// writes are taken in turn), so the reader has taken those and come
	// back for more. Nothing but the pump writes a screen, so none is
	// ever drawn out of order.
	if _, err := t.pw.Write(nil); err != nil {
		return fmt.Errorf("agentapi screen: %w", err)
	}
	return nil
}

// Close stops reading the screen; the program is not signalled (the
// pane's hang-up does that).
func (t *Terminal) Close() error {
	t.mu.Lock()
	closed := t.closed
	t.closed = true
	t.mu.Unlock()
	if !closed {
		t.cancel()
		t.pr.Close()
		<-t.pumped
	}
	return nil
}

// PID is agentapi's: the leader of its own process group. The pane's
// program is its child, in a session of its own on agentapi's terminal,
// and dies of SIGHUP when agentapi does.
func (t *Terminal) PID() int { return t.srv.PID() }

// Foreground is the process group holding agentapi's terminal, 0 when it
// cannot be read (read in /proc: agentapi does not say).
func (t *Terminal) Foreground() int {
	pid, _, err := t.srv.Foreground()
	if err != nil {
		return 0
	}
	return pid
}

// Wait waits for agentapi to exit, which it does when its program does.
func (t *Terminal) Wait() error {
	<-t.srv.Done()
	if t.srv.ExitCode() == 0 {
		return nil
	}
	return t.srv.Err()
}

// pump writes every screen agentapi shows into the pipe as a redraw of
// the whole terminal, until agentapi exits or Close. A stream that ends
// while agentapi runs (agentapi drops a reader that falls behind) is
// opened again: its first event is the screen as it is now.
func (t *Terminal) pump(ctx context.Context) {
	defer close(t.pumped)
	defer t.pw.Close()
	for ctx.Err() == nil {
		select {
		case <-t.srv.Done():
			return
		default:
		}
		s, err := t.srv.Client().ScreenUpdates(ctx)
		if err == nil {
			err = t.follow(s)
			s.Close()
		}
		select {
		case <-t.srv.Done():
			return
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (t *Terminal) follow(s *Stream) error {
	for {
		ev, err := s.Next()
		if err != nil {
			return err
		}
		if ev.Type != EventScreen {
			continue
		}
		if _, err := io.WriteString(t.pw, t.redraw(ev.Screen)); err != nil {
			return fmt.Errorf("agentapi screen: %w", err)
		}
	}
}

// redraw is the bytes that make an emulator show screen: the bracketed
// paste mode the foreground implies, home, erase, and the rows.
func (t *Terminal) redraw(screen string) string {
	var b strings.Builder
	b.Grow(len(screen) + len(screen)/40 + 16)
	if t.bracketed() {
		b.WriteString("\x1b[?2004h")
	} else {
		b.WriteString("\x1b[?2004l")
	}
	b.WriteString("\x1b[H\x1b[2J")
	b.WriteString(strings.ReplaceAll(screen, "\n", "\r\n"))
	return b.String()
}

// bracketed reports whether something other than the pane's first
// program (its shell) holds the terminal.
func (t *Terminal) bracketed() bool {
	shell, err := t.srv.AgentPID()
	if err != nil {
		return false
	}
	fg := t.Foreground()
	return fg > 0 && fg != shell
}
