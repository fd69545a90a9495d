package herdrtest

import (
	"context"
	"os"
	"os/exec"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Terminal is a pane's program and the terminal it runs on, as the server
// drives it. The server reads the program's output from it into the
// pane's emulator (the screen pane.read and detection look at), writes
// herdr's input into it, asks it which process group holds the terminal
// (agent detection, the hang-up of a pane's jobs) and waits for the
// program to exit (pane_exited).
//
// The default runs the program in a PTY of this process (StartPTY).
// Config.Start puts it elsewhere: package agentapi runs each pane under
// its own agentapi server, so fleetd's one delivery engine drives agents
// on a machine without herdr through the same protocol.
type Terminal interface {
	// Read returns the program's output as a terminal receives it; an
	// error (io.EOF, EIO) once nothing more can come.
	Read(p []byte) (int, error)
	// Write sends input to the program as one write.
	Write(p []byte) (int, error)
	// Close releases the terminal; a pending Read returns.
	Close() error
	// PID is the program's process: the leader of its process group,
	// which a pane's hang-up signals.
	PID() int
	// Foreground is the process group in the foreground of the terminal,
	// 0 when it cannot be read.
	Foreground() int
	// Wait waits until the program has exited.
	Wait() error
}

// Syncer is a Terminal whose output lags its program's screen: package
// agentapi's is the screen agentapi samples every 25 ms, once the
// program has stopped drawing for 16 ms (at most 48 ms later). An agent's
// hook can report before that sample shows what the agent drew before it
// ran the hook (Gemini's "Executing Hook" row, then its screen cleared to
// resume a session), and the engine reads the screen right after the
// report: pane.read (visible, detection) first waits for a Syncer, so
// that it shows the screen as of the request, as a herdr pane's emulator,
// fed as the program writes, does.
type Syncer interface {
	// Sync returns once Read has returned the output that shows the
	// program's screen as of the call, and has been called again (the
	// server puts each read on the pane's screen before the next).
	Sync(ctx context.Context) error
}

// StartSpec is a pane's program: its command line, its whole
// environment (herdr's pane variables applied), its working directory
// and the terminal's size.
type StartSpec struct {
	Argv       []string
	Env        []string
	Dir        string
	Cols, Rows int
}

// StartPTY runs spec's program in a new PTY of this process, as herdr
// does: the program leads its own session with the PTY as its
// controlling terminal.
func StartPTY(spec StartSpec) (Terminal, error) {
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(spec.Cols), Rows: uint16(spec.Rows)})
	if err != nil {
		return nil, err
	}
	return &ptyTerminal{File: ptmx, cmd: cmd}, nil
}

type ptyTerminal struct {
	*os.File
	cmd *exec.Cmd
}

func (t *ptyTerminal) PID() int    { return t.cmd.Process.Pid }
func (t *ptyTerminal) Wait() error { return t.cmd.Wait() }

// Foreground asks the PTY for its foreground process group (TIOCGPGRP).
func (t *ptyTerminal) Foreground() int {
	raw, err := t.SyscallConn()
	if err != nil {
		return 0
	}
	pgrp := 0
	raw.Control(func(fd uintptr) {
		if g, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil {
			pgrp = g
		}
	})
	return pgrp
}
