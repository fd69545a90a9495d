package simagent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/simagent"
)

const agent = "w-sim-1"

// Test terminal size.
const cols, lines = 100, 24

// terminal is `fleetd sim-agent` running in a real PTY, its output kept
// both raw and as a screen laid out by a terminal emulator.
type terminal struct {
	pty  *os.File
	dir  string // the agent's working directory
	mu   sync.Mutex
	out  bytes.Buffer
	scr  *vt.Emulator
	osc  oscFilter
	done chan error
}

// oscFilter drops OSC sequences (the window title) from the output fed to
// the emulator: charmbracelet/x/vt v0.1.0 ends an OSC at any 0x9C byte
// (C1 ST), so the UTF-8 of "✳" (E2 9C B3) in Claude's idle title cuts it
// short and prints the rest of it on the screen. The title is checked on
// the raw output instead.
type oscFilter struct{ state int }

func (f *oscFilter) filter(b []byte) []byte {
	const ground, esc, osc, oscEsc = 0, 1, 2, 3
	out := make([]byte, 0, len(b))
	for _, c := range b {
		switch f.state {
		case ground:
			if c == 0x1b {
				f.state = esc
				continue
			}
			out = append(out, c)
		case esc:
			if c == ']' {
				f.state = osc
				continue
			}
			f.state = ground
			out = append(out, 0x1b, c)
		case osc:
			switch c {
			case 0x07:
				f.state = ground
			case 0x1b:
				f.state = oscEsc
			}
		case oscEsc:
			f.state = osc
			if c == '\\' {
				f.state = ground
			}
		}
	}
	return out
}

func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(fleetd, append([]string{"sim-agent"}, args...)...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: lines, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{pty: f, dir: cmd.Dir, scr: vt.NewEmulator(cols, lines), done: make(chan error, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			_, _ = term.scr.Write(term.osc.filter(buf[:n]))
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
		<-read
	})
	return term
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// screen is the emulated screen's rows down to the last that is not
// blank, trailing spaces trimmed.
func (term *terminal) screen() []string {
	term.mu.Lock()
	defer term.mu.Unlock()
	rows := strings.Split(term.scr.String(), "\n")
	for len(rows) > 0 && strings.TrimSpace(rows[len(rows)-1]) == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// waitScreen polls the screen until ok accepts it.
func (term *terminal) waitScreen(t *testing.T, what string, ok func(rows []string) bool) []string {
	t.Helper()
	var rows []string
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if rows = term.screen(); !ok(rows) {
			return fmt.Errorf("screen does not show %s:\n%s", what, strings.Join(rows, "\n"))
		}
		return nil
	})
	return rows
}

// waitBox waits until the bottom of the screen is the idle prompt box
// holding text: rule, "❯" and a no-break space before the text, rule,
// footer.
func (term *terminal) waitBox(t *testing.T, text string) []string {
	t.Helper()
	return term.waitScreen(t, fmt.Sprintf("the prompt box with %q", text), func(rows []string) bool {
		return slices.Equal(bottom(rows, 4), box("❯", text, "  ⏵⏵ auto mode on (shift+tab to cycle)"))
	})
}

// box is the prompt box's rows at the test terminal's width.
func box(char, text, footer string) []string {
	rule := strings.Repeat("─", cols)
	return []string{rule, char + "\u00a0" + text, rule, footer}
}

// bottom is the last n rows.
func bottom(rows []string, n int) []string { return rows[max(0, len(rows)-n):] }

// contains reports whether some row holds s.
func contains(rows []string, s string) bool {
	return slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, s) })
}

func (term *terminal) write(t *testing.T, s string) {
	t.Helper()
	if _, err := term.pty.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// prompt types text as a bracketed paste, waits for its echo, then sends
// Enter as a separate write — the way herdr's agent.prompt does.
func (term *terminal) prompt(t *testing.T, text string) {
	t.Helper()
	before := strings.Count(term.output(), text)
	term.write(t, "\x1b[200~"+text+"\x1b[201~")
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if strings.Count(term.output(), text) <= before {
			return fmt.Errorf("no echo of %q yet", text)
		}
		return nil
	})
	term.write(t, "\r")
}

// baseEnv is this process's environment without herdr's or fleet's
// variables (the tests may themselves run in a pane).
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HERDR_") || strings.HasPrefix(kv, "FLEET_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// waitEvents polls the agent's log until it holds n events.
func waitEvents(t *testing.T, log events.Log, n int) []events.Event {
	t.Helper()
	s, _ := events.AgentAll(agent)
	var got []events.Event
	checkfor.Eventually(t, 15*time.Second, 50*time.Millisecond, func() error {
		got = eventstest.ReadAll(t, log, events.Query{Subjects: []string{s}})
		if len(got) < n {
			return fmt.Errorf("%d events, want %d: %v", len(got), n, types(got))
		}
		return nil
	})
	if len(got) > n {
		t.Errorf("%d events, want %d: %v", len(got), n, types(got))
	}
	return got
}

func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type())
		if s, ok := ev.Data.(events.AgentStatusChanged); ok {
			out[i] += ":" + string(s.Status)
		}
	}
	return out
}

// The simulated agent in a PTY fires the real hooks: a session, a prompt
// submitted with its prompt id, a reply with the deterministic text and
// the tokens the hook read back from the transcript, a failure, a
// permission block, and the end of the session.
func TestSimAgentFiresTheRealHooks(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	spool := t.TempDir()
	term := startTerminal(t, baseEnv("FLEET_AGENT_ID="+agent, "FLEET_HOST=h1", "FLEET_NATS_URL="+srv.ClientURL(),
		"FLEET_SPOOL_DIR="+spool, "HERDR_AGENT=claude"),
		"--think", "100ms", "--transcript-dir", t.TempDir())

	evs := waitEvents(t, log, 2)
	session, ok := evs[0].Data.(events.AgentSession)
	if !ok || session.State != "started" || session.SessionID == "" || session.Model != "claude-sim-1" || session.TranscriptPath == "" {
		t.Fatalf("first event = %#v, want a started session", evs[0].Data)
	}
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(term.output(), "\x1b[?2004h") || !strings.Contains(term.output(), "❯\u00a0") {
			return fmt.Errorf("screen lacks bracketed paste or the ❯ prompt: %q", term.output())
		}
		return nil
	})

	term.prompt(t, "hello world")
	evs = waitEvents(t, log, 6)
	sub, ok := evs[2].Data.(events.AgentSubmitted)
	if !ok || sub.Prompt != "hello world" || sub.PromptID == "" || sub.SessionID != session.SessionID || sub.Via != "hook" {
		t.Errorf("submitted = %#v", evs[2].Data)
	}
	rep, ok := evs[4].Data.(events.AgentReplied)
	if !ok {
		t.Fatalf("event 4 = %#v, want replied", evs[4].Data)
	}
	in, out, cached := simagent.TokensFor("hello world", "SIM: hello world")
	if rep.Reply != "SIM: hello world" || rep.PromptID != sub.PromptID || rep.SessionID != session.SessionID || rep.Model != "claude-sim-1" {
		t.Errorf("replied = %#v", rep)
	}
	if want := (events.Tokens{In: in, Out: out, CacheRead: cached}); rep.Tokens != want {
		t.Errorf("reply tokens = %+v, want %+v (from the transcript)", rep.Tokens, want)
	}
	if want := simagent.CostFor(in, out, cached); math.Abs(rep.CostUSD-want) > 1e-12 {
		t.Errorf("reply cost = %v, want %v", rep.CostUSD, want)
	}
	if got := fmt.Sprint(types(evs[2:6])); got != "[fleet.agent.submitted fleet.agent.status:working fleet.agent.replied fleet.agent.status:idle]" {
		t.Errorf("turn events = %s", got)
	}
	// The agent draws the reply before its Stop hook runs, but this
	// test's reader of the terminal may not have read it yet.
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(term.output(), "● SIM: hello world") {
			return errors.New("the reply is not on screen")
		}
		return nil
	})

	term.prompt(t, "break [fail]")
	evs = waitEvents(t, log, 10)
	if f, ok := evs[8].Data.(events.AgentFailed); !ok || f.Reason != "agent_error" || !strings.Contains(f.Message, "API Error: 500") {
		t.Errorf("failure = %#v", evs[8].Data)
	}

	term.prompt(t, "ask first [block]")
	evs = waitEvents(t, log, 13)
	if s, ok := evs[12].Data.(events.AgentStatusChanged); !ok || s.Status != events.StatusBlocked {
		t.Fatalf("event 12 = %#v, want blocked", evs[12].Data)
	}
	term.write(t, "\r") // approve
	evs = waitEvents(t, log, 15)
	if r, ok := evs[13].Data.(events.AgentReplied); !ok || r.Reply != "SIM: ask first [block]" {
		t.Errorf("after approval = %#v, want the reply", evs[13].Data)
	}

	term.prompt(t, "/exit")
	evs = waitEvents(t, log, 16)
	if e, ok := evs[15].Data.(events.AgentSession); !ok || e.State != "ended" || e.Reason != "prompt_input_exit" || e.SessionID != session.SessionID {
		t.Errorf("last event = %#v, want the session ended", evs[15].Data)
	}
	select {
	case err := <-term.done:
		if err != nil {
			t.Errorf("sim-agent exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("sim-agent did not exit after /exit")
	}
	// The agent's spool directory holds the prompt hook's done mark (a
	// dot file), and no event.
	if files, _ := filepath.Glob(filepath.Join(spool, "*", "*.json")); len(files) != 0 {
		t.Errorf("hooks spooled with NATS up: %v", files)
	}
}

// With the gateway down the agent carries on: its hooks spool, and it
// still replies on screen.
func TestSimAgentWithNATSDownKeepsWorking(t *testing.T) {
	spool := t.TempDir()
	dead := fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePorts(t, 1)[0])
	term := startTerminal(t, baseEnv("FLEET_AGENT_ID="+agent, "FLEET_NATS_URL="+dead, "FLEET_SPOOL_DIR="+spool),
		"--think", "10ms", "--transcript-dir", t.TempDir())
	term.waitBox(t, "")
	term.prompt(t, "still there?")
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(term.output(), "● SIM: still there?") {
			return errors.New("no reply on screen yet")
		}
		files, _ := filepath.Glob(filepath.Join(spool, agent, "*.json"))
		if len(files) != 6 { // session+idle, submitted+working, replied+idle
			return fmt.Errorf("%d spooled events, want 6", len(files))
		}
		return nil
	})
	// The spool replays in id order: the async prompt hook's events come
	// before the Stop hook's, which waited for it.
	files, _ := filepath.Glob(filepath.Join(spool, agent, "*.json"))
	sort.Strings(files)
	var kinds []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kinds = append(kinds, strings.TrimSpace(ev.Type+" "+ev.Data.Status))
	}
	want := []string{"fleet.agent.session", "fleet.agent.status idle", "fleet.agent.submitted", "fleet.agent.status working", "fleet.agent.replied", "fleet.agent.status idle"}
	if !slices.Equal(kinds, want) {
		t.Errorf("spool in replay order: %q, want %q", kinds, want)
	}
}

// In a herdr pane, with no hooks at all, herdr's screen rules see the
// simulated agent as claude: idle at its ❯ prompt, working under the
// spinner title while a prompt typed by agent.prompt runs, idle again.
func TestSimAgentLooksLikeClaudeToHerdr(t *testing.T) {
	h := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t), IdleConfirmations: 1})
	ctx := context.Background()
	pane, err := h.SpawnPane(ctx, herdrtest.PaneSpec{
		Argv: []string{fleetd, "sim-agent", "--no-hooks", "--think", "1500ms", "--transcript-dir", t.TempDir()},
		Env:  map[string]string{"HERDR_AGENT": "claude"},
	})
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		var r struct {
			Result struct {
				Pane struct {
					Agent       string `json:"agent"`
					AgentStatus string `json:"agent_status"`
				} `json:"pane"`
			} `json:"result"`
		}
		call(t, h.Path(), "pane.get", map[string]any{"pane_id": pane.ID}, &r)
		return r.Result.Pane.Agent + "/" + r.Result.Pane.AgentStatus
	}
	waitStatus := func(want ...string) {
		t.Helper()
		checkfor.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
			got := status()
			for _, w := range want {
				if got == w {
					return nil
				}
			}
			return fmt.Errorf("pane is %s, want %v", got, want)
		})
	}
	waitStatus("claude/idle", "claude/done")
	call(t, h.Path(), "agent.prompt", map[string]any{"target": pane.ID, "text": "hi from herdr"}, nil)
	waitStatus("claude/working")
	waitStatus("claude/idle", "claude/done")
	out := string(h.Output(pane.ID))
	if !strings.Contains(out, "● SIM: hi from herdr") {
		t.Errorf("pane output lacks the reply: %q", out)
	}
	if strings.Count(out, "SIM: ") != 1 {
		t.Errorf("the prompt ran %d times, want once", strings.Count(out, "SIM: "))
	}
}

// call makes one raw herdr request and decodes its answer into out.
func call(t *testing.T, socket, method string, params any, out any) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b, _ := json.Marshal(map[string]any{"id": "t", "method": method, "params": params})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(line, []byte(`"error"`)) {
		t.Fatalf("%s: %s", method, line)
	}
	if out != nil {
		if err := json.Unmarshal(line, out); err != nil {
			t.Fatal(err)
		}
	}
}

// --resume continues the given Claude session: every hook reports that
// session id, and SessionStart says it resumed.
func TestSimAgentResumesASession(t *testing.T) {
	srv, log := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	const sid = "0b6f5c1e-1111-4222-8333-444455556666"
	term := startTerminal(t, baseEnv("FLEET_AGENT_ID="+agent, "FLEET_HOST=h1", "FLEET_NATS_URL="+srv.ClientURL(),
		"FLEET_SPOOL_DIR="+t.TempDir(), "HERDR_AGENT=claude"),
		"--think", "10ms", "--transcript-dir", t.TempDir(), "--resume", sid)
	evs := waitEvents(t, log, 2)
	if s, ok := evs[0].Data.(events.AgentSession); !ok || s.SessionID != sid || s.Source != "resume" {
		t.Fatalf("first event = %#v, want session %s resumed", evs[0].Data, sid)
	}
	term.prompt(t, "where were we")
	evs = waitEvents(t, log, 6)
	if r, ok := evs[4].Data.(events.AgentReplied); !ok || r.SessionID != sid {
		t.Errorf("reply = %#v, want session %s", evs[4].Data, sid)
	}
}

// "[orchestrate: ARGS]" runs `fleetd orchestrate ARGS` in the agent's
// environment and replies with what it printed; a failing run is reported
// in the reply.
func TestSimAgentOrchestrateMarkerRunsFleetd(t *testing.T) {
	dir := t.TempDir()
	script := dir + "/fleetd"
	body := "#!/bin/sh\n[ \"$2\" = fail ] && { echo 'no such plan' >&2; exit 3; }\necho \"rollup of $* by $FLEET_AGENT_ID\"\necho progress >&2\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	term := startTerminal(t, baseEnv("FLEET_AGENT_ID=main-a-1"),
		"--no-hooks", "--fleetd", script, "--think", "10ms", "--transcript-dir", t.TempDir())
	term.waitBox(t, "")
	term.prompt(t, "do part A [orchestrate: /p/sub.json --job j1 --spawn]")
	term.prompt(t, "again [orchestrate: fail]")
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		out := term.output()
		if !strings.Contains(out, "● rollup of orchestrate /p/sub.json --job j1 --spawn by main-a-1") {
			return errors.New("no rollup reply on screen yet")
		}
		if !strings.Contains(out, "● orchestrate failed: exit status 3: no such plan") {
			return errors.New("no failure reply on screen yet")
		}
		return nil
	})
	if strings.Contains(term.output(), "progress") {
		t.Error("the command's stderr reached the screen")
	}
}
