package fakeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/internal/checkfor"
)

// These tests run the real Claude Code CLI (on PATH, see RequireClaude)
// against the fake. They skip without it, and fail without it when CI=true.

func TestClaudePrintModeGetsTheEcho(t *testing.T) {
	s := fakeapi.Start(t)
	c := fakeapi.SetupClaude(t, s.URL())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	cmd := exec.CommandContext(ctx, c.Bin, "-p", "please reply with PINEAPPLE")
	cmd.Dir, cmd.Env = c.Workdir, c.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude -p: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if got, want := stdout.String(), "ECHO: please reply with PINEAPPLE"; !strings.Contains(got, want) {
		t.Errorf("stdout = %q, want it to contain %q", got, want)
	}
	r, err := s.WaitFor(ctx, func(r fakeapi.Request) bool { return r.Prompt == "please reply with PINEAPPLE" })
	if err != nil {
		t.Fatalf("the fake never saw the prompt: %v; saw %d requests", err, len(s.Requests()))
	}
	if r.Path != "/v1/messages" || !r.Stream || r.Rule != "echo" || r.Header.Get("Authorization") != "Bearer test" {
		t.Errorf("request = %s %s stream=%v rule=%q auth=%q, want a streamed echo with the bearer token",
			r.Method, r.Path, r.Stream, r.Rule, r.Header.Get("Authorization"))
	}
}

// terminal is a claude process in a pseudo-terminal whose output is drained
// continuously, so the TUI never blocks on a full pty buffer.
type terminal struct {
	pty     *os.File
	done    chan struct{} // output drained
	exited  chan struct{} // process waited for
	waitErr error

	mu  sync.Mutex
	out bytes.Buffer
}

func startTerminal(t *testing.T, cmd *exec.Cmd) *terminal {
	t.Helper()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatalf("start claude in a pty: %v", err)
	}
	term := &terminal{pty: f, done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(term.exited)
		term.waitErr = cmd.Wait()
	}()
	go func() {
		defer close(term.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-term.exited
		_ = f.Close()
		<-term.done
	})
	return term
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// paste types text the way herdr's agent.prompt does: a bracketed paste, then
// Enter as a separate write 300 ms later.
func (term *terminal) paste(t *testing.T, text string) {
	t.Helper()
	if _, err := term.pty.Write([]byte("\x1b[200~" + text + "\x1b[201~")); err != nil {
		t.Fatalf("type %q: %v", text, err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := term.pty.Write([]byte("\r")); err != nil {
		t.Fatalf("press enter: %v", err)
	}
}

// hookPayload is the part of Claude Code's hook stdin the tests look at.
type hookPayload struct {
	SessionID            string `json:"session_id"`
	HookEventName        string `json:"hook_event_name"`
	PromptID             string `json:"prompt_id"`
	Prompt               string `json:"prompt"`
	Source               string `json:"source"`
	Reason               string `json:"reason"`
	LastAssistantMessage string `json:"last_assistant_message"`
	TranscriptPath       string `json:"transcript_path"`
}

// waitHooks waits until n payloads of event were recorded and returns them.
func waitHooks(t *testing.T, dir, event string, n int, term *terminal) []hookPayload {
	t.Helper()
	var got []hookPayload
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		raws, err := fakeapi.ReadHookPayloads(dir, event)
		if err != nil {
			return err
		}
		if len(raws) < n {
			return errors.New(event + " hook: " + strconv.Itoa(len(raws)) + " payloads, want " + strconv.Itoa(n) +
				"\nscreen tail: " + tail(term.output(), 600))
		}
		got = got[:0]
		for _, raw := range raws {
			var p hookPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			got = append(got, p)
		}
		return nil
	})
	return got
}

func tail(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.ToValidUTF8(s, "")
}

// startInteractive starts claude in a pty with settings whose hooks record
// each payload in the returned dir, and waits until the prompt box is painted.
func startInteractive(t *testing.T, settings fakeapi.ClaudeSettings, events ...string) (*fakeapi.Server, fakeapi.Claude, *terminal, string, hookPayload) {
	t.Helper()
	s := fakeapi.Start(t)
	c := fakeapi.SetupClaude(t, s.URL())
	hooks := t.TempDir()
	settings.Hooks = map[string]string{}
	for _, e := range events {
		settings.Hooks[e] = fakeapi.RecordHookCommand(hooks, e)
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := settings.Write(path); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.Bin, "--settings", path)
	cmd.Dir, cmd.Env = c.Workdir, append(c.Env, "TERM=xterm-256color")
	term := startTerminal(t, cmd)

	start := waitHooks(t, hooks, "SessionStart", 1, term)[0]
	// The prompt box is painted a few hundred ms after SessionStart; text
	// typed before it is kept, but typing at process start loses the Enter.
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if !strings.Contains(term.output(), "❯") {
			return errors.New("no prompt box yet; screen tail: " + tail(term.output(), 600))
		}
		return nil
	})
	return s, c, term, hooks, start
}

func TestClaudeInteractiveTurnsFireHooksWithTheEcho(t *testing.T) {
	settings := fakeapi.ClaudeSettings{DefaultMode: "default", Allow: []string{"Bash"}}
	_, c, term, hooks, start := startInteractive(t, settings, "SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
	if start.Source != "startup" || start.SessionID == "" {
		t.Errorf("SessionStart = %+v, want source startup and a session id", start)
	}

	turns := []struct{ prompt, reply string }{
		{"please reply with PINEAPPLE", "ECHO: please reply with PINEAPPLE"},
		{"list it [tool=Bash:echo tool-ran]", "ECHO: list it [tool=Bash:echo tool-ran]\nTOOL_RESULT: tool-ran"},
		{"write it [tool=Bash:touch made-by-tool]", "ECHO: write it [tool=Bash:touch made-by-tool]\nTOOL_RESULT: (Bash completed with no output)"},
	}
	for i, turn := range turns {
		term.paste(t, turn.prompt)
		submit := waitHooks(t, hooks, "UserPromptSubmit", i+1, term)[i]
		stop := waitHooks(t, hooks, "Stop", i+1, term)[i]
		if submit.Prompt != turn.prompt || submit.PromptID == "" {
			t.Errorf("turn %d: UserPromptSubmit = %+v, want prompt %q and a prompt id", i, submit, turn.prompt)
		}
		if stop.PromptID != submit.PromptID || stop.SessionID != start.SessionID {
			t.Errorf("turn %d: Stop prompt_id/session = %s/%s, want %s/%s", i,
				stop.PromptID, stop.SessionID, submit.PromptID, start.SessionID)
		}
		if stop.LastAssistantMessage != turn.reply {
			t.Errorf("turn %d: last_assistant_message = %q, want %q", i, stop.LastAssistantMessage, turn.reply)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Workdir, "made-by-tool")); err != nil {
		t.Errorf("the allowed tool did not run: %v", err)
	}
	if _, err := os.Stat(start.TranscriptPath); err != nil {
		t.Errorf("transcript: %v", err)
	}

	term.paste(t, "/exit")
	end := waitHooks(t, hooks, "SessionEnd", 1, term)[0]
	if end.Reason != "prompt_input_exit" {
		t.Errorf("SessionEnd reason = %q, want prompt_input_exit", end.Reason)
	}
	select {
	case <-term.exited:
		if term.waitErr != nil {
			t.Errorf("claude exit: %v", term.waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("claude did not exit after /exit")
	}
}

func TestClaudeInteractiveToolWithoutPermissionNotifies(t *testing.T) {
	settings := fakeapi.ClaudeSettings{DefaultMode: "default"}
	_, _, term, hooks, _ := startInteractive(t, settings, "SessionStart", "UserPromptSubmit", "Notification", "Stop")
	term.paste(t, "write it [tool=Bash:touch not-allowed]")
	submit := waitHooks(t, hooks, "UserPromptSubmit", 1, term)[0]
	var note struct {
		PromptID         string `json:"prompt_id"`
		NotificationType string `json:"notification_type"`
	}
	raw := waitRaw(t, hooks, "Notification", term)
	if err := json.Unmarshal(raw, &note); err != nil {
		t.Fatal(err)
	}
	if note.NotificationType != "permission_prompt" || note.PromptID != submit.PromptID {
		t.Errorf("Notification = %s, want a permission_prompt for prompt %s", raw, submit.PromptID)
	}
	if stops, _ := fakeapi.ReadHookPayloads(hooks, "Stop"); len(stops) != 0 {
		t.Errorf("Stop fired while waiting for permission: %s", stops[0])
	}
}

func TestClaudeInteractiveAPIErrorFiresStopFailure(t *testing.T) {
	_, _, term, hooks, _ := startInteractive(t, fakeapi.ClaudeSettings{}, "SessionStart", "StopFailure")
	term.paste(t, "break [status=400]")
	var failure struct {
		HookEventName        string `json:"hook_event_name"`
		LastAssistantMessage string `json:"last_assistant_message"`
	}
	if err := json.Unmarshal(waitRaw(t, hooks, "StopFailure", term), &failure); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(failure.LastAssistantMessage, "API Error: 400") {
		t.Errorf("StopFailure last_assistant_message = %q, want an API Error 400", failure.LastAssistantMessage)
	}
}

// waitRaw waits for the first recorded payload of event.
func waitRaw(t *testing.T, dir, event string, term *terminal) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	checkfor.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		raws, err := fakeapi.ReadHookPayloads(dir, event)
		if err != nil {
			return err
		}
		if len(raws) == 0 {
			return errors.New("no " + event + " hook yet; screen tail: " + tail(term.output(), 600))
		}
		raw = raws[0]
		return nil
	})
	return raw
}
