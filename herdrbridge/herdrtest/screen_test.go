package herdrtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// TestMain lets the test binary double as a pane program: with
// HERDRTEST_HELPER set it runs that helper instead of the tests, so a test
// can put a program in a pane whose behaviour sh cannot express exactly.
func TestMain(m *testing.M) {
	switch os.Getenv("HERDRTEST_HELPER") {
	case "":
		os.Exit(m.Run())
	case "da1":
		askDA1()
	default:
		fmt.Println("unknown helper", os.Getenv("HERDRTEST_HELPER"))
		os.Exit(2)
	}
}

// askDA1 asks its terminal for its primary device attributes, as TUIs do
// at start, and prints the answer it reads back on stdin. It turns off
// canonical mode and echo first, so the answer needs no newline and does
// not show on the screen by itself.
func askDA1() {
	fd := int(os.Stdin.Fd())
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		fmt.Println("termios:", err)
		os.Exit(1)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err != nil {
		fmt.Println("termios:", err)
		os.Exit(1)
	}
	os.Stdout.WriteString("\x1b[c")
	var answer []byte
	b := make([]byte, 1)
	for !bytes.HasSuffix(answer, []byte("c")) {
		if _, err := os.Stdin.Read(b); err != nil {
			fmt.Println("read:", err)
			os.Exit(1)
		}
		answer = append(answer, b[0])
	}
	fmt.Printf("ANSWER %q\n", answer)
	io.Copy(io.Discard, os.Stdin) // stay in the pane until it closes
}

// ask sends one request over the socket and decodes the answer line.
func ask(t *testing.T, path, method, params string) map[string]any {
	t.Helper()
	out := roundTrip(t, path, fmt.Sprintf(`{"id":"r1","method":%q,"params":%s}`+"\n", method, params))
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s answer %q: %v", method, out, err)
	}
	return m
}

// readPane is pane.read over the socket; it returns the read object.
func readPane(t *testing.T, path, paneID, params string) map[string]any {
	t.Helper()
	m := ask(t, path, "pane.read", fmt.Sprintf(`{"pane_id":%q,%s}`, paneID, params))
	res, _ := m["result"].(map[string]any)
	read, ok := res["read"].(map[string]any)
	if !ok {
		t.Fatalf("pane.read answered %v", m)
	}
	return read
}

func TestTerminalScreen(t *testing.T) {
	term := newTerminal(20, 5, 1<<20)
	term.write([]byte("a\u00a0b  \u00a0  \r\n日本 ok\r\n"))
	for i := range 7 {
		term.write(fmt.Appendf(nil, "line %d\r\n", i))
	}
	t.Run("the screen shows the last rows, trimmed, NBSP and wide runes kept", func(t *testing.T) {
		want := []string{"line 3", "line 4", "line 5", "line 6", ""}
		if got := term.screen(false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("screen = %q, want %q", got, want)
		}
	})
	t.Run("history is the scrollback followed by the screen", func(t *testing.T) {
		want := []string{"a\u00a0b  \u00a0", "日本 ok", "line 0", "line 1", "line 2", "line 3", "line 4", "line 5", "line 6", ""}
		if got := term.history(false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("history = %q, want %q", got, want)
		}
	})
	t.Run("the alternate screen replaces the screen and has no history", func(t *testing.T) {
		term.write([]byte("\x1b[?1049h\x1b[2J\x1b[2;1H❯ hi\x1b[4;3Hfooter"))
		want := []string{"", "❯ hi", "", "  footer", ""}
		if got := term.screen(false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("alt screen = %q, want %q", got, want)
		}
		if got := term.history(false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("alt history = %q, want %q", got, want)
		}
	})
	t.Run("leaving the alternate screen brings the main screen back", func(t *testing.T) {
		term.write([]byte("\x1b[?1049l"))
		if got := term.screen(false); got[0] != "line 3" {
			t.Errorf("main screen = %q", got)
		}
	})
}

func TestPaneReadShowsTheScreen(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t)})
	p, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{"sh", "-c",
		`printf '\033[?1049h\033[2J\033[5;1H❯ hello\033[10;1Hfooter\033[12;1H\033[31mred\033[0m'; exec sleep 30`}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, 24)
	want[4], want[9], want[11] = "❯ hello", "footer", "red"
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		if got := readPane(t, s.Path(), p.ID, `"source":"visible"`)["text"]; got != strings.Join(want, "\n") {
			return fmt.Errorf("visible = %q, want %q", got, strings.Join(want, "\n"))
		}
		return nil
	})
	tests := []struct {
		name, params string
		rows         []string
		truncated    bool
	}{
		{"detection is the screen", `"source":"detection"`, want, false},
		{"lines keeps the bottom rows", `"source":"visible","lines":15`, want[9:], true},
		{"recent on the alternate screen is the screen", `"source":"recent_unwrapped"`, want, false},
		{"recent with lines", `"source":"recent","lines":3`, want[21:], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := readPane(t, s.Path(), p.ID, tt.params)
			if r["text"] != strings.Join(tt.rows, "\n") || r["truncated"] != tt.truncated {
				t.Errorf("read %s = %q truncated %v, want %q truncated %v", tt.params, r["text"], r["truncated"], strings.Join(tt.rows, "\n"), tt.truncated)
			}
		})
	}
	t.Run("ansi keeps the styles, row by row", func(t *testing.T) {
		for _, params := range []string{`"source":"visible","format":"ansi"`, `"source":"visible","strip_ansi":false`} {
			text, _ := readPane(t, s.Path(), p.ID, params)["text"].(string)
			rows := strings.Split(text, "\n")
			if len(rows) != 24 || rows[4] != "❯ hello" || !strings.HasPrefix(rows[11], "\x1b[31mred") {
				t.Errorf("read %s = %q", params, text)
			}
		}
	})
}

// waitStatus polls agent.get until the pane's status is one of want.
func waitStatus(t *testing.T, path, paneID string, want ...string) {
	t.Helper()
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		m := ask(t, path, "agent.get", fmt.Sprintf(`{"target":%q}`, paneID))
		res, _ := m["result"].(map[string]any)
		agent, _ := res["agent"].(map[string]any)
		got, _ := agent["agent_status"].(string)
		for _, w := range want {
			if got == w {
				return nil
			}
		}
		return fmt.Errorf("agent.get = %v, want status in %v", m, want)
	})
}

func TestDetectionReadsTheScreen(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t), DetectInterval: 20 * time.Millisecond})
	// A form drawn under the prompt box, then erased by cursor addressing:
	// a log of lines would still hold it, the screen does not.
	script := `printf '\033[?1049h\033[2J\033[5;1H❯ \033[10;1HDo you want to proceed?\033[11;1HEnter to confirm · Esc to cancel'
read x
printf '\033[10;1H\033[2K\033[11;1H\033[2K\033[5;3H'
read x
printf '\033]0;⠋ Working\007'
exec sleep 30`
	p, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{"sh", "-c", script}, Env: map[string]string{"HERDR_AGENT": "claude"}})
	if err != nil {
		t.Fatal(err)
	}
	enter := func() {
		t.Helper()
		if m := ask(t, s.Path(), "pane.send_keys", fmt.Sprintf(`{"pane_id":%q,"keys":["enter"]}`, p.ID)); m["error"] != nil {
			t.Fatalf("send_keys: %v", m)
		}
	}
	waitStatus(t, s.Path(), p.ID, "blocked")
	enter()
	waitStatus(t, s.Path(), p.ID, "idle", "done")
	rows := strings.Split(readPane(t, s.Path(), p.ID, `"source":"detection"`)["text"].(string), "\n")
	if rows[4] != "❯" || strings.Contains(strings.Join(rows, "\n"), "Esc to cancel") {
		t.Errorf("detection rows after the form was erased: %q", rows)
	}
	enter()
	waitStatus(t, s.Path(), p.ID, "working")
}

func TestTerminalQueriesAreAnswered(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := Start(t, Config{Validator: herdrschema.Schema(t)})
	p, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{exe}, Env: map[string]string{"HERDRTEST_HELPER": "da1"}})
	if err != nil {
		t.Fatal(err)
	}
	var line string
	checkfor.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		text, _ := readPane(t, s.Path(), p.ID, `"source":"visible"`)["text"].(string)
		for _, r := range strings.Split(text, "\n") {
			if strings.HasPrefix(r, "ANSWER ") {
				line = r
				return nil
			}
		}
		return fmt.Errorf("no answer on the screen: %q", text)
	})
	if !strings.HasPrefix(line, `ANSWER "\x1b[?`) || !strings.HasSuffix(line, `c"`) {
		t.Errorf("the program read %s, want a DA1 answer (ESC [ ? … c)", line)
	}
	if in := s.Input(p.ID); len(in) != 0 {
		t.Errorf("Input = %q, want nothing: the terminal's answers are not herdr API input", in)
	}
}

func TestUnreadAnswersDoNotStallOutput(t *testing.T) {
	s := Start(t, Config{Validator: herdrschema.Schema(t)})
	// Thousands of cursor-position queries whose answers nobody reads: the
	// PTY's input fills, answers queue and then drop, and output goes on.
	script := `i=0; while [ $i -lt 5000 ]; do printf '\033[6n'; i=$((i+1)); done; echo; echo ALL-ASKED; exec sleep 30`
	p, err := s.SpawnPane(context.Background(), PaneSpec{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	checkfor.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if !bytes.Contains(s.Output(p.ID), []byte("ALL-ASKED")) {
			return fmt.Errorf("output stalled after %d bytes", len(s.Output(p.ID)))
		}
		return nil
	})
	start := time.Now()
	if m := ask(t, s.Path(), "pane.close", fmt.Sprintf(`{"pane_id":%q}`, p.ID)); m["error"] != nil {
		t.Fatalf("pane.close: %v", m)
	}
	s.Close() // waits for the pane's goroutines, the blocked forwarder too
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closing took %v", d)
	}
}

// Claude Code's idle title "✳ Claude Code" holds the byte 0x9C in its
// UTF-8; an emulator that took it for ST would print the rest of the title
// onto the screen.
func TestATitleNeverReachesTheScreen(t *testing.T) {
	term := newTerminal(40, 5, 1<<20)
	term.write([]byte("\x1b]0;✳ Claude Code\x07row one\r\n\x1b]2;⠋ working\x1b\\row two\r\n\x1bP1$r\x1b\\\x1b[1mbold\x1b[0m"))
	got := strings.Join(term.screen(false), "|")
	if want := "row one|row two|bold||"; got != want {
		t.Errorf("screen %q, want %q", got, want)
	}
	if term.title != "⠋ working" {
		t.Errorf("title %q", term.title)
	}
}
