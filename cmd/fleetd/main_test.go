package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// fleetdBin is the fleetd binary built once for the tests that run it as
// a child process (kill -9, the nats CLI, hooks).
var fleetdBin string

func TestMain(m *testing.M) { os.Exit(fleettest.RunWithFleetd(m, ".", &fleetdBin)) }

// freePort is a port for a child process to listen on: reserved for the
// test, outside the range the kernel hands out by itself (natstest).
func freePort(t testing.TB) int {
	t.Helper()
	return natstest.FreePorts(t, 1)[0]
}

// upProcess is a child process, `fleetd up` or another, whose output
// (stdout and stderr, as one stream) the test keeps.
type upProcess struct {
	cmd *exec.Cmd
	url string
	// http is the lead shim's base URL (http://127.0.0.1:port).
	http   string
	mu     sync.Mutex
	output strings.Builder
	// line is the output's last line until it ends; readyText the text a
	// line shows once the process serves, which closes ready.
	line      string
	readyText string
	ready     chan struct{}
}

// startUp runs `fleetd up` on dataDir and waits until its banner says it
// serves. It runs with --no-herdr unless args name a --herdr socket.
func startUp(t *testing.T, dataDir string, args ...string) *upProcess {
	t.Helper()
	return startUpOn(t, freePort(t), freePort(t), dataDir, args...)
}

// restartUp starts fleetd up again on the ports prev listened on, as a
// host's service restarts: the agents' hooks still reach its NATS there.
func restartUp(t *testing.T, prev *upProcess, dataDir string, args ...string) *upProcess {
	t.Helper()
	var port, httpPort int
	if _, err := fmt.Sscanf(prev.url, "nats://127.0.0.1:%d", &port); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(prev.http, "http://127.0.0.1:%d", &httpPort); err != nil {
		t.Fatal(err)
	}
	return startUpOn(t, port, httpPort, dataDir, args...)
}

func startUpOn(t *testing.T, port, httpPort int, dataDir string, args ...string) *upProcess {
	t.Helper()
	all := []string{"up", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--http", fmt.Sprintf("127.0.0.1:%d", httpPort), "--host", "testhost"}
	if !slices.Contains(args, "--herdr") && !slices.Contains(args, "--runtime") {
		all = append(all, "--no-herdr")
	}
	p := launch(t, "up on host", append(all, args...)...)
	p.url, p.http = fmt.Sprintf("nats://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	waitLaunched(t, p, 30*time.Second)
	return p
}

// launch runs fleetd with args, its output captured; ready is the text
// its output shows once it serves.
func launch(t *testing.T, ready string, args ...string) *upProcess {
	t.Helper()
	cmd := exec.Command(fleetdBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "FLEET_LOG_LEVEL=info")
	return startChild(t, cmd, ready)
}

// startChild starts cmd with its output captured, and kills it (continued
// first, should the test have stopped it) when the test ends.
func startChild(t *testing.T, cmd *exec.Cmd, ready string) *upProcess {
	t.Helper()
	p := &upProcess{cmd: cmd, readyText: ready, ready: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return p
}

// waitLaunched waits until p's output shows its ready text.
func waitLaunched(t *testing.T, p *upProcess, limit time.Duration) {
	t.Helper()
	select {
	case <-p.ready:
	case <-time.After(limit):
		t.Fatalf("%v did not come up within %v:\n%s", p.cmd.Args[1:], limit, p.Output())
	}
}

// Write keeps the child's output and closes ready at the first whole line
// that shows the ready text.
func (p *upProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.output.Write(b)
	p.line += string(b)
	for {
		line, rest, whole := strings.Cut(p.line, "\n")
		if !whole {
			break
		}
		if p.readyText != "" && strings.Contains(line, p.readyText) {
			close(p.ready)
			p.readyText = ""
		}
		p.line = rest
	}
	return len(b), nil
}

func (p *upProcess) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

func connectLog(t *testing.T, url string) (events.Log, jetstream.JetStream) {
	t.Helper()
	js := connectJS(t, url)
	return events.New(js, events.Options{Source: "fleetd/test/client"}), js
}

// connectJS connects to the NATS server at url, with opts, for the
// length of the test.
func connectJS(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// An acknowledged append survives kill -9 of the server: SyncAlways is on
// by default, so the ack means the event is on disk.
func TestUpSurvivesSIGKILLWithEveryAcknowledgedEvent(t *testing.T) {
	dataDir := t.TempDir()
	up := startUp(t, dataDir)
	log, _ := connectLog(t, up.url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	acked := map[string]bool{}
	for i := range 200 {
		ack, err := log.Append(ctx, events.Event{Subject: "w-1", Data: events.AgentQueued{Text: fmt.Sprint("task ", i)}})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		acked[ack.ID] = true
	}
	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	up.cmd.Wait()

	again := startUp(t, dataDir)
	log2, _ := connectLog(t, again.url)
	got := map[string]bool{}
	for ev, err := range log2.Read(ctx, events.Query{Subjects: []string{"fleet.agent.w-1.>"}}) {
		if err != nil {
			t.Fatal(err)
		}
		got[ev.ID] = true
	}
	for id := range acked {
		if !got[id] {
			t.Errorf("acknowledged event %s lost after kill -9", id)
		}
	}
	if len(got) != len(acked) {
		t.Errorf("read %d events, acknowledged %d", len(got), len(acked))
	}
}

// `fleetd up` announces the host and a clean shutdown announces it down;
// `fleetd tail` reads both over the URL.
func TestUpAnnouncesHostAndTailReadsIt(t *testing.T) {
	dataDir := t.TempDir()
	up := startUp(t, dataDir)
	if err := up.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := up.cmd.Wait(); err != nil {
		t.Fatalf("up exited with %v:\n%s", err, up.Output())
	}
	again := startUp(t, dataDir)
	out, err := exec.Command(fleetdBin, "tail", "--nats", again.url, "--since", "all", "--no-follow").CombinedOutput()
	if err != nil {
		t.Fatalf("tail: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var kinds []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 5 && f[2] == "host" {
			kinds = append(kinds, f[4])
		}
	}
	if want := []string{"up", "down", "up"}; strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("host events %v, want %v\n%s", kinds, want, out)
	}
	jsonOut, err := exec.Command(fleetdBin, "tail", "--nats", again.url, "--since", "all", "--no-follow", "--json", "--subject", "fleet.host.*.down").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(jsonOut), `"type":"fleet.host.down"`) || strings.Count(strings.TrimSpace(string(jsonOut)), "\n") != 0 {
		t.Errorf("tail --json --subject: %s", jsonOut)
	}
}

func TestTailRejectsABadSince(t *testing.T) {
	out, err := exec.Command(fleetdBin, "tail", "--nats", "nats://127.0.0.1:1", "--since", "yesterday").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--since") {
		t.Errorf("want a clear --since error, got %v: %s", err, out)
	}
}

// requireTool finds an external tool the test needs. In CI (CI=true) a
// missing tool fails the test, because .ci/run installs it; locally the
// test skips with a clear message.
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not on PATH; .ci/run must install it (%s)", name, install)
	}
	t.Skipf("%s is not on PATH (install: %s); skipping", name, install)
	return ""
}

// The stock nats CLI can tap the log: `nats stream view FLEET` and
// `nats sub --stream FLEET --all` both show events fleetd appended.
func TestNatsCLISeesTheLog(t *testing.T) {
	natsBin := requireTool(t, "nats", "go install github.com/nats-io/natscli/nats@v0.5.0")
	up := startUp(t, t.TempDir())
	log, _ := connectLog(t, up.url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ids []string
	for i := range 3 {
		ack, err := log.Append(ctx, events.Event{Subject: "w-cli", Data: events.AgentQueued{Text: fmt.Sprint("tap me ", i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ack.ID)
	}
	run := func(args ...string) string {
		t.Helper()
		return mustNats(ctx, t, natsBin, up.url, args...)
	}
	// nats stream view pages interactively and insists on a terminal.
	view := runInPTY(t, ctx, natsBin, "--server", up.url, "stream", "view", events.Stream, "--subject", "fleet.agent.w-cli.>")
	sub := run("sub", "--stream", events.Stream, "--all", "--count", "3", "fleet.agent.w-cli.>")
	for _, id := range ids {
		if !strings.Contains(view, id) {
			t.Errorf("nats stream view does not show %s:\n%s", id, view)
		}
		if !strings.Contains(sub, id) {
			t.Errorf("nats sub --stream --all does not show %s:\n%s", id, sub)
		}
	}
}

// runInPTY runs a command on a pseudo-terminal (for tools that insist on
// one) and returns what it printed once it exits or goes quiet.
func runInPTY(t *testing.T, ctx context.Context, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "TERM=dumb")
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer f.Close()
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case <-waitErr:
	case <-time.After(15 * time.Second):
		// A pager waiting for a key: the output is complete by now.
		cmd.Process.Kill()
		<-waitErr
	}
	f.Close()
	<-done
	return out.String()
}
