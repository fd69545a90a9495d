package herdrtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetd/fleetd/internal/proc"
)

type pane struct {
	id, terminalID string
	tab            *tab
	cwd            string
	name           string // agent name, when given one
	tty            Terminal
	term           *terminal
	inputs         []InputWrite
	wmu            sync.Mutex    // orders PTY writes together with their record
	exited         chan struct{} // closed once the process is reaped and removed
	closing        bool          // killed by pane.close or Close: no pane_exited
	gone           bool          // removed from the layout

	detected  string // agent named by the foreground process
	hook      *hookReport
	lastSeq   map[string]uint64 // last accepted report seq per source
	state     string            // internal: idle, working, blocked, unknown
	seen      bool
	stateSeq  uint64
	idleVotes int
}

type hookReport struct {
	source, agent, state string
}

// agent is the effective agent label: a hook authority's, else detection's.
func (p *pane) agent() string {
	if p.hook != nil {
		return p.hook.agent
	}
	return p.detected
}

// isAgent is herdr's is_agent_terminal: detected, hook-labelled or named.
func (p *pane) isAgent() bool { return p.agent() != "" || p.name != "" }

// InputWrite is one write herdr made into a pane's PTY, in order, so tests
// can check both what a program was sent and how it was chunked.
type InputWrite struct {
	At   time.Time
	Data []byte
}

// PaneSpec describes a pane created directly through the Go API, running
// Argv instead of the shell.
type PaneSpec struct {
	Argv []string
	Env  map[string]string
	Cwd  string
	// Name is the agent name (agent.get/prompt accept it as a target).
	Name string
	// WorkspaceID places the pane in that workspace's active tab; empty
	// means the focused workspace, or a new workspace when there is none.
	WorkspaceID string
}

// Pane identifies a pane created by SpawnPane.
type Pane struct {
	ID, WorkspaceID, TabID, TerminalID string
	PID                                int
}

// SpawnPane creates a pane running spec.Argv in a PTY, with the same
// environment rules and events as pane.split (or workspace.create when it
// makes the first workspace). It is how tests and the demo start a
// program without typing it into a shell.
func (s *Server) SpawnPane(ctx context.Context, spec PaneSpec) (Pane, error) {
	if len(spec.Argv) == 0 {
		return Pane{}, errors.New("herdrtest: SpawnPane needs Argv")
	}
	if err := ctx.Err(); err != nil {
		return Pane{}, err
	}
	if e := checkEnv(spec.Env); e != nil {
		return Pane{}, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var t *tab
	switch {
	case spec.WorkspaceID != "":
		ws := s.workspaceLocked(spec.WorkspaceID)
		if ws == nil {
			return Pane{}, errf("workspace_not_found", "workspace %s not found", spec.WorkspaceID)
		}
		t = ws.activeTab
	case s.focusedWS != nil:
		t = s.focusedWS.activeTab
	}
	var p *pane
	if t == nil {
		ws, nt, np, err := s.startWorkspaceLocked("", spec.Argv, spec.Env, spec.Cwd)
		if err != nil {
			return Pane{}, err
		}
		p = np
		p.name = spec.Name
		s.emitCreatedLocked(ws, nt, p)
	} else {
		var err error
		if p, err = s.startPaneLocked(t, spec.Argv, spec.Env, spec.Cwd); err != nil {
			return Pane{}, err
		}
		p.name = spec.Name
		s.emitSplitLocked(p)
	}
	return Pane{ID: p.id, WorkspaceID: p.tab.ws.id, TabID: p.tab.id, TerminalID: p.terminalID, PID: p.tty.PID()}, nil
}

// startWorkspaceLocked makes a workspace whose first tab runs argv. When
// the program cannot start, the workspace is taken back and the start
// error returned.
func (s *Server) startWorkspaceLocked(label string, argv []string, env map[string]string, cwd string) (*workspace, *tab, *pane, error) {
	ws, t := s.newWorkspaceLocked(label)
	p, err := s.startPaneLocked(t, argv, env, cwd)
	if err != nil {
		s.workspaces = remove(s.workspaces, ws)
		if s.focusedWS == ws {
			s.focusedWS = nil
		}
		return nil, nil, nil, err
	}
	return ws, t, p, nil
}

// emitCreatedLocked emits workspace.create's events in herdr's order.
func (s *Server) emitCreatedLocked(ws *workspace, t *tab, p *pane) {
	wi, ti, pi, l := s.workspaceInfoLocked(ws), s.tabInfoLocked(t), s.paneInfoLocked(p), s.layoutLocked(t)
	s.emitLocked(eventData{Type: "workspace_created", Workspace: &wi})
	s.emitLocked(eventData{Type: "tab_created", Tab: &ti})
	s.emitLocked(eventData{Type: "pane_created", Pane: &pi})
	s.emitLocked(eventData{Type: "layout_updated", Layout: &l})
}

// emitSplitLocked emits pane.split's events: pane_created, layout_updated.
func (s *Server) emitSplitLocked(p *pane) {
	pi, l := s.paneInfoLocked(p), s.layoutLocked(p.tab)
	s.emitLocked(eventData{Type: "pane_created", Pane: &pi})
	s.emitLocked(eventData{Type: "layout_updated", Layout: &l})
}

// checkEnv applies herdr's env rules: keys non-empty without '=' or NUL,
// values without NUL.
func checkEnv(env map[string]string) *apiError {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return errf("invalid_env", "invalid environment variable %q", k)
		}
	}
	return nil
}

// startPaneLocked starts argv in a new PTY as a pane of t. herdr's own
// variables are applied last, so they win over the caller's env.
func (s *Server) startPaneLocked(t *tab, argv []string, env map[string]string, cwd string) (*pane, error) {
	ws := t.ws
	ws.nextPane++
	s.nextTerm++
	p := &pane{
		id:         ws.id + ":p" + idNum(ws.nextPane),
		terminalID: fmt.Sprintf("term_%08x", s.nextTerm),
		tab:        t,
		term:       newTerminal(s.cfg.Cols, s.cfg.Rows, s.cfg.OutputLimit),
		exited:     make(chan struct{}),
		lastSeq:    map[string]uint64{},
		state:      stUnknown,
		seen:       true,
	}
	vars := map[string]string{}
	for _, kv := range s.cfg.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	for k, v := range env {
		vars[k] = v
	}
	delete(vars, "CODEX_THREAD_ID")
	vars["HERDR_SOCKET_PATH"] = s.cfg.SocketPath
	vars["HERDR_ENV"] = "1"
	vars["HERDR_WORKSPACE_ID"] = ws.id
	vars["HERDR_TAB_ID"] = t.id
	vars["HERDR_PANE_ID"] = p.id
	if s.cfg.BinPath != "" {
		vars["HERDR_BIN_PATH"] = s.cfg.BinPath
	}
	spec := StartSpec{Argv: argv, Dir: cwd, Cols: s.cfg.Cols, Rows: s.cfg.Rows}
	for k, v := range vars {
		spec.Env = append(spec.Env, k+"="+v)
	}
	sort.Strings(spec.Env)
	p.cwd = cwd
	if p.cwd == "" {
		p.cwd, _ = os.Getwd()
	}
	tty, err := s.cfg.Start(spec)
	if err != nil {
		ws.nextPane--
		return nil, errf("pane_split_failed", "start %s: %v", argv[0], err)
	}
	p.tty = tty
	t.panes = append(t.panes, p)
	if t.focused == nil {
		t.focused = p
	}
	s.panes[p.id] = p
	s.all[p.id] = p
	outputDone, answersDone := make(chan struct{}), make(chan struct{})
	queue := make(chan []byte, answerQueue)
	s.wg.Go(func() { s.pumpOutput(p, outputDone) })
	s.wg.Go(func() { drainAnswers(p.term.answers(), queue) })
	s.wg.Go(func() { forwardAnswers(p, queue, answersDone) })
	s.wg.Go(func() { s.reap(p, outputDone, answersDone) })
	return p, nil
}

// answerQueue is how many answer chunks may wait for the PTY. A program
// that asks and never reads its input must not stall the pane's output, so
// beyond this answers are dropped; a real terminal would be stuck instead,
// which is no better a model.
const answerQueue = 64

// drainAnswers reads the emulator's answers to terminal queries as the
// emulator writes them. Its pipe is synchronous, so without a reader the
// emulator's Write (and with it output processing) would block; this loop
// never blocks on anything but the pipe: a full queue drops the answer.
// It ends, closing queue, when the pane's terminal closes its answer pipe.
func drainAnswers(r io.Reader, queue chan<- []byte) {
	defer close(queue)
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case queue <- bytes.Clone(buf[:n]):
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// forwardAnswers writes queued answers into the pane's PTY, as a real
// terminal answers the program it runs. They are not recorded in Input:
// that is what herdr's API wrote, and herdr's own terminal answers are not
// API input. Once the PTY is closed the writes fail and the rest is
// discarded; it ends when the queue is closed and drained.
func forwardAnswers(p *pane, queue <-chan []byte, done chan<- struct{}) {
	defer close(done)
	for b := range queue {
		p.wmu.Lock()
		p.tty.Write(b)
		p.wmu.Unlock()
	}
}

// pumpOutput feeds the program's output to the pane's terminal.
func (s *Server) pumpOutput(p *pane, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.tty.Read(buf)
		if n > 0 {
			s.mu.Lock()
			p.term.write(buf[:n])
			s.notifyLocked()
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// reap waits for the process, lets its last output drain, and then does
// what herdr does when a pane's process dies: pane_exited, then the pane
// leaves the layout (pane_closed and friends). It owns the pane's
// goroutines: the pane is not exited until they have all ended.
func (s *Server) reap(p *pane, outputDone, answersDone <-chan struct{}) {
	p.tty.Wait()
	select {
	case <-outputDone:
	case <-time.After(500 * time.Millisecond):
		// a background child still holds the PTY open
	}
	p.tty.Close() // also unblocks an answer write stuck on a full PTY
	<-outputDone
	// No output is left to answer: end the answer pipe, then wait for the
	// forwarder to discard what is still queued.
	p.term.closeAnswers()
	<-answersDone
	s.mu.Lock()
	if !p.closing {
		s.emitLocked(eventData{Type: "pane_exited", PaneID: p.id, WorkspaceID: p.tab.ws.id})
	}
	s.removePaneLocked(p)
	s.mu.Unlock()
	close(p.exited)
}

// hangUp sends SIGHUP to each pane's process groups, then SIGKILL, after
// KillGrace, to those of every pane still alive and to the foreground job
// of every pane, and waits until they are reaped (a job whose pane ended
// without it, until it is dead).
//
// A pane's groups are its program's and its terminal's foreground group:
// a shell runs what was typed into it (an agent, say) as a job of its own
// group. Signalling the shell's group alone left such a job that ignores
// SIGHUP — anything started under nohup does — holding the terminal
// after the shell was gone, and the pane never ended; and since panes
// were killed one after the other, neither did any pane after it.
func (s *Server) hangUp(panes []*pane) {
	groups := make([][]int, len(panes))
	for i, p := range panes {
		groups[i] = []int{p.tty.PID()}
		if fg := p.tty.Foreground(); fg > 0 && fg != p.tty.PID() {
			groups[i] = append(groups[i], fg)
		}
		signalGroups(groups[i], syscall.SIGHUP)
	}
	deadline := time.After(s.cfg.KillGrace)
grace:
	for _, p := range panes {
		select {
		case <-p.exited:
		case <-deadline:
			break grace
		}
	}
	var jobs []int
	for i, p := range panes {
		jobs = append(jobs, groups[i][1:]...)
		select {
		case <-p.exited:
			// The pane's program is gone, but a job that ignores SIGHUP
			// outlives it (its pane ends half a second after the program,
			// when reap stops waiting for the terminal).
			signalGroups(groups[i][1:], syscall.SIGKILL)
		default:
			signalGroups(groups[i], syscall.SIGKILL)
		}
	}
	for _, p := range panes {
		<-p.exited
	}
	// A pane ends half a second after its program whatever holds its
	// terminal, and a SIGKILL is only sent, not yet taken, when kill
	// returns: Close returns once the jobs are dead too.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !slices.ContainsFunc(jobs, alive) {
			break
		}
	}
}

// alive reports whether process pid runs: it exists and is not a zombie
// waiting to be reaped.
func alive(pid int) bool {
	st, ok := proc.ReadStat("/proc/" + strconv.Itoa(pid))
	return ok && st.Alive()
}

// signalGroups sends sig to each process group.
func signalGroups(groups []int, sig syscall.Signal) {
	for _, g := range groups {
		syscall.Kill(-g, sig)
	}
}

// write sends b to the pane's program as one write and records it.
func (s *Server) write(p *pane, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.tty.Write(b)
	if err != nil {
		return errf("pane_send_failed", "write to pane %s: %v", p.id, err)
	}
	s.mu.Lock()
	p.inputs = append(p.inputs, InputWrite{At: time.Now(), Data: append([]byte(nil), b...)})
	s.mu.Unlock()
	return nil
}

// Input returns every write made into the pane's PTY so far, including
// after the pane closed.
func (s *Server) Input(paneID string) []InputWrite {
	return copyOf(s, paneID, func(p *pane) []InputWrite { return p.inputs })
}

// Output returns the raw bytes the pane's program wrote (its output and the
// terminal's echo of its input), up to OutputLimit.
func (s *Server) Output(paneID string) []byte {
	return copyOf(s, paneID, func(p *pane) []byte { return p.term.raw })
}

// copyOf copies, under s.mu, what field holds for any pane the server ever
// made; nil for an unknown id.
func copyOf[T any](s *Server, paneID string, field func(*pane) []T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.all[paneID]; p != nil {
		return append([]T(nil), field(p)...)
	}
	return nil
}
