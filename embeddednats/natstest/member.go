package natstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats"
)

// memberEnv carries a child member's configuration (JSON) from the test
// to the copy of its binary that serves it.
const memberEnv = "NATSTEST_MEMBER"

// readyPrefix starts the line a child member prints once it serves,
// followed by its client URL.
const readyPrefix = "natstest member ready "

// Member is a cluster member served by a child process of the test
// binary, so that a test can kill it as a crash does: SIGKILL, with no
// word to the others, which learn that it is gone only from its silence.
// An in-process server cannot die like that — its Shutdown tells the
// cluster at once — and a member that goes silent is what JetStream
// mishandles longest (it counts a killed member as online for minutes).
//
// The test binary serves members only if its TestMain calls ServeMember.
type Member struct {
	// URL is the member's client URL.
	URL string
	// Config is what the member was started with.
	Config embeddednats.Config

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr string // the file the child's stderr goes to
	exited chan struct{}
}

// ServeMember serves a cluster member and exits, if this process was
// started as one by StartClusterWithProcesses; otherwise it returns at
// once. Call it first thing in TestMain. The member serves until the test
// that started it closes its stdin (its end) or kills it.
func ServeMember() {
	raw, ok := os.LookupEnv(memberEnv)
	if !ok {
		return
	}
	var cfg embeddednats.Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "natstest member: bad %s: %v\n", memberEnv, err)
		os.Exit(2)
	}
	srv, err := embeddednats.New(cfg)
	if err == nil {
		err = srv.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "natstest member %s: %v\n", cfg.ServerName, err)
		os.Exit(1)
	}
	fmt.Println(readyPrefix + srv.ClientURL())
	// Until the test is done with it, or the test itself is gone: a
	// member is never left behind by a test binary that crashed.
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
	os.Exit(0)
}

// startMember starts cfg's member in a child process; ready reports the
// outcome of its start once it is known.
func startMember(tb testing.TB, cfg embeddednats.Config) (*Member, <-chan error) {
	tb.Helper()
	cfg.Logger = nil // not carried; a child logs nothing
	raw, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatalf("natstest: member %s config: %v", cfg.ServerName, err)
	}
	// -test.run=^$: a binary whose TestMain does not serve members runs
	// no test, prints PASS and exits, which says what is wrong.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(raw))
	m := &Member{Config: cfg, cmd: cmd, exited: make(chan struct{})}
	m.stderr = filepath.Join(tb.TempDir(), cfg.ServerName+".stderr")
	stderr, err := os.Create(m.stderr)
	if err != nil {
		tb.Fatalf("natstest: member %s: %v", cfg.ServerName, err)
	}
	defer stderr.Close() // the child has its own copy
	cmd.Stderr = stderr
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatalf("natstest: member %s: %v", cfg.ServerName, err)
	}
	// A pipe of its own, not StdoutPipe: that one is closed by Wait,
	// which runs beside the reads here.
	stdout, w, err := os.Pipe()
	if err != nil {
		tb.Fatalf("natstest: member %s: %v", cfg.ServerName, err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		tb.Fatalf("natstest: member %s: %v", cfg.ServerName, err)
	}
	go func() {
		cmd.Wait()
		close(m.exited)
	}()
	tb.Cleanup(m.close)
	ready := make(chan error, 1)
	go func() {
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		var said []string
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				m.URL = url
				ready <- nil
				io.Copy(io.Discard, stdout)
				return
			}
			said = append(said, sc.Text())
		}
		<-m.exited
		errOut, _ := os.ReadFile(m.stderr)
		ready <- fmt.Errorf("member %s exited (%v) before it served; does TestMain call natstest.ServeMember? stdout %q, stderr %q",
			m.Name(), cmd.ProcessState, said, errOut)
	}()
	return m, ready
}

// Name is the member's server name.
func (m *Member) Name() string { return m.Config.ServerName }

// Kill ends the member with SIGKILL and waits until it is gone.
func (m *Member) Kill(tb testing.TB) {
	tb.Helper()
	if err := m.cmd.Process.Kill(); err != nil {
		select {
		case <-m.exited:
			return
		default:
			tb.Fatalf("natstest: kill member %s: %v", m.Name(), err)
		}
	}
	<-m.exited
}

// close ends the member the way it is asked to (its stdin closes), and
// kills it if it has not gone within a while.
func (m *Member) close() {
	m.stdin.Close()
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		m.cmd.Process.Kill()
		<-m.exited
	}
}
