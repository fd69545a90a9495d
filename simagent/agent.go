package simagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Config configures a simulated agent.
type Config struct {
	// Think is how long a turn works unless its prompt says [delay=…].
	// Default 2 s.
	Think time.Duration
	// Model names the model in hooks and transcript. Default claude-sim-1.
	Model string
	// ReplyPrefix starts every reply; the prompt follows. Default "SIM: ".
	ReplyPrefix string
	// Fleetd is the fleetd executable whose `hook` command the agent runs.
	// Required unless NoHooks.
	Fleetd string
	// NoHooks runs no hooks at all (for hook-less paths).
	NoHooks bool
	// Resume continues the Claude session with this id, as `claude
	// --resume <id>` does: the hooks report this session id (SessionStart
	// with source "resume") and the transcript <id>.jsonl grows. Empty
	// starts a new session with a fresh id.
	Resume string
	// HookTimeout bounds each hook, as Claude's settings do. Default 10 s.
	HookTimeout time.Duration
	// TranscriptDir holds <session>.jsonl. Default
	// $TMPDIR/fleetd-sim-agent (never ~/.claude, so a person's resume
	// list stays clean).
	TranscriptDir string
	// Cwd is reported to hooks. Default the working directory.
	Cwd string
	// Env is the hooks' environment. Default os.Environ() (the pane's).
	Env []string
	// In and Out are the terminal. Required.
	In  io.Reader
	Out io.Writer
}

func (c *Config) setDefaults() {
	if c.Think == 0 {
		c.Think = 2 * time.Second
	}
	if c.Model == "" {
		c.Model = "claude-sim-1"
	}
	if c.HookTimeout == 0 {
		c.HookTimeout = 10 * time.Second
	}
	if c.TranscriptDir == "" {
		c.TranscriptDir = filepath.Join(os.TempDir(), "fleetd-sim-agent")
	}
	if c.Cwd == "" {
		c.Cwd, _ = os.Getwd()
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
}

// Validate reports every problem with the config at once.
func (c Config) Validate() error {
	var errs []error
	if c.Fleetd == "" && !c.NoHooks {
		errs = append(errs, errors.New("simagent: Fleetd is required unless NoHooks"))
	}
	if c.In == nil || c.Out == nil {
		errs = append(errs, errors.New("simagent: In and Out are required"))
	}
	if c.Think < 0 {
		errs = append(errs, fmt.Errorf("simagent: think %v is negative", c.Think))
	}
	return errors.Join(errs...)
}

// DefaultReplyPrefix is what a reply starts with unless configured.
const DefaultReplyPrefix = "SIM: "

// TokensFor is the usage the agent records for a turn: in = 10 + the
// prompt's runes, out = the reply's runes, cache read 100. Deterministic,
// so tests can assert what the Stop hook read from the transcript.
func TokensFor(prompt, reply string) (in, out, cacheRead int64) {
	return 10 + int64(len([]rune(prompt))), int64(len([]rune(reply))), 100
}

// CostFor is the cost the agent records for a turn with those tokens.
func CostFor(in, out, cacheRead int64) float64 {
	return float64(in)*3e-6 + float64(out)*15e-6 + float64(cacheRead)*0.3e-6
}

// Agent is one simulated Claude Code session.
type Agent struct {
	cfg Config

	mu  sync.Mutex // guards writes to cfg.Out
	sid string
	tp  string // transcript path
	// totalCost is the session's running cost (cost-state lines).
	totalCost float64
	modelIn   int64
	modelOut  int64
	// lastPrompt is the last prompt id, which SessionEnd carries.
	lastPrompt string
}

// New returns an agent that has not started. It does no I/O.
func New(cfg Config) (*Agent, error) {
	cfg.setDefaults()
	if cfg.ReplyPrefix == "" {
		cfg.ReplyPrefix = DefaultReplyPrefix
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg}, nil
}

// SessionID is the session's id, set once Run has started.
func (a *Agent) SessionID() string { return a.sid }

// Screen sequences.
const (
	bracketedPasteOn  = "\x1b[?2004h"
	bracketedPasteOff = "\x1b[?2004l"
	idleTitle         = "✳ Claude Code"
	promptLine        = "\r\n❯ "
)

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

func (a *Agent) print(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = io.WriteString(a.cfg.Out, s)
}

func (a *Agent) title(t string) { a.print("\x1b]0;" + t + "\x07") }

// Run starts the session, serves prompts until "/exit", the end of input
// or ctx, and returns nil on a clean end. A read of In blocked when Run
// returns ends with In (the terminal closing).
func (a *Agent) Run(ctx context.Context) error {
	source := "startup"
	a.sid = newUUID()
	if a.cfg.Resume != "" {
		a.sid, source = a.cfg.Resume, "resume"
	}
	if err := os.MkdirAll(a.cfg.TranscriptDir, 0o755); err != nil {
		return fmt.Errorf("simagent: transcript dir: %w", err)
	}
	a.tp = filepath.Join(a.cfg.TranscriptDir, a.sid+".jsonl")
	if _, err := os.Stat(a.tp); err != nil {
		if err := a.appendTranscript(map[string]any{"type": "summary", "summary": "fleetd sim-agent session", "sessionId": a.sid}); err != nil {
			return err
		}
	}
	a.print(bracketedPasteOn)
	a.title(idleTitle)
	a.print(fmt.Sprintf("✻ Welcome to the fleetd simulated Claude Code (%s)\r\n  cwd: %s\r\n", a.cfg.Model, a.cfg.Cwd))
	if source == "resume" {
		a.print("  resumed session " + a.sid + "\r\n")
	}
	a.hook(ctx, "SessionStart", map[string]any{"source": source, "model": a.cfg.Model})
	a.print(promptLine)
	defer a.print(bracketedPasteOff + "\r\n")

	submits := make(chan string)
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	go a.read(readCtx, submits)

	for {
		var s string
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case s, ok = <-submits:
		}
		switch {
		case !ok:
			return nil // the terminal closed
		case s == "" || s == keyInterrupt:
			if s == keyInterrupt {
				a.print(promptLine)
			}
			continue
		case s == "/exit":
			a.print("\r\n")
			a.hook(ctx, "SessionEnd", map[string]any{"prompt_id": a.lastPrompt, "reason": "prompt_input_exit"})
			return nil
		}
		if err := a.turn(ctx, s, submits); err != nil {
			return err
		}
		a.title(idleTitle)
		a.print(promptLine)
	}
}

// read feeds input to the line editor and hands submitted prompts over.
func (a *Agent) read(ctx context.Context, submits chan<- string) {
	defer close(submits)
	var ed lineEditor
	buf := make([]byte, 4096)
	for {
		n, err := a.cfg.In.Read(buf)
		if n > 0 {
			subs, echo := ed.feed(buf[:n])
			if echo != "" {
				a.print(echo)
			}
			for _, s := range subs {
				select {
				case submits <- s:
				case <-ctx.Done():
					return
				}
			}
		}
		if err != nil || ctx.Err() != nil {
			return
		}
	}
}

var (
	delayRE = regexp.MustCompile(`\[delay=([0-9a-zµ.]+)\]`)
	// orchestrateRE is the marker that makes the agent act as a main: it
	// runs `fleetd orchestrate ARGS` and replies with what it printed.
	orchestrateRE = regexp.MustCompile(`\[orchestrate:([^\]]+)\]`)
)

// turn runs one prompt: UserPromptSubmit, work, transcript, Stop.
func (a *Agent) turn(ctx context.Context, prompt string, submits <-chan string) error {
	promptID := newUUID()
	a.lastPrompt = promptID
	a.print("\r\n")
	a.hook(ctx, "UserPromptSubmit", map[string]any{"prompt_id": promptID, "permission_mode": "default", "prompt": prompt})
	if err := a.appendTranscript(map[string]any{
		"type": "user", "promptId": promptID, "sessionId": a.sid, "uuid": newUUID(), "cwd": a.cfg.Cwd,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message":   map[string]any{"role": "user", "content": prompt},
	}); err != nil {
		return err
	}
	think := a.cfg.Think
	if m := delayRE.FindStringSubmatch(prompt); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			think = d
		}
	}

	spin := a.spin()
	if strings.Contains(prompt, "[block]") {
		spin.stop()
		a.title(idleTitle)
		a.print("\r\n Bash command\r\n\r\n   simulated-tool --needs-permission\r\n\r\n Do you want to proceed?\r\n" +
			"❯ 1. Yes\r\n  2. No\r\n\r\n Esc to cancel · Enter to confirm\r\n")
		a.hook(ctx, "Notification", map[string]any{"prompt_id": promptID,
			"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"})
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-submits:
			if !ok {
				return nil
			}
		}
		spin = a.spin()
	}
	var reply string
	if m := orchestrateRE.FindStringSubmatch(prompt); m != nil {
		reply = a.orchestrate(ctx, strings.Fields(m[1]))
	} else {
		select {
		case <-ctx.Done():
			spin.stop()
			return nil
		case <-time.After(think):
		}
		reply = a.cfg.ReplyPrefix + prompt
	}
	spin.stop()
	if ctx.Err() != nil {
		return nil
	}

	if strings.Contains(prompt, "[fail]") {
		msg := `API Error: 500 {"type":"error","error":{"type":"api_error","message":"simulated failure"}}`
		if err := a.appendTranscript(map[string]any{
			"type": "assistant", "sessionId": a.sid, "uuid": newUUID(), "isApiErrorMessage": true,
			"message": map[string]any{"id": "msg_" + newUUID(), "model": "<synthetic>", "role": "assistant",
				"content": []any{map[string]any{"type": "text", "text": msg}},
				"usage":   map[string]any{"input_tokens": 0, "output_tokens": 0}},
		}); err != nil {
			return err
		}
		a.print("● " + msg + "\r\n")
		a.hook(ctx, "StopFailure", map[string]any{"prompt_id": promptID, "permission_mode": "default",
			"error": "server_error", "last_assistant_message": msg})
		return nil
	}

	in, out, cached := TokensFor(prompt, reply)
	cost := CostFor(in, out, cached)
	a.totalCost += cost
	a.modelIn += in
	a.modelOut += out
	if err := a.appendTranscript(map[string]any{
		"type": "assistant", "sessionId": a.sid, "uuid": newUUID(), "requestId": "req_" + newUUID(),
		"message": map[string]any{"id": "msg_" + newUUID(), "model": a.cfg.Model, "role": "assistant",
			"content":     []any{map[string]any{"type": "text", "text": reply}},
			"stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": in, "output_tokens": out,
				"cache_creation_input_tokens": 0, "cache_read_input_tokens": cached}},
	}); err != nil {
		return err
	}
	if err := a.appendTranscript(map[string]any{
		"type": "cost-state", "sessionId": a.sid, "totalCostUSD": a.totalCost,
		"modelUsage": map[string]any{a.cfg.Model: map[string]any{
			"inputTokens": a.modelIn, "outputTokens": a.modelOut, "costUSD": a.totalCost}},
	}); err != nil {
		return err
	}
	a.print("● " + strings.ReplaceAll(reply, "\n", "\r\n  ") + "\r\n")
	a.hook(ctx, "Stop", map[string]any{"prompt_id": promptID, "permission_mode": "default",
		"effort": map[string]any{"level": "medium"}, "stop_hook_active": false,
		"last_assistant_message": reply, "background_tasks": []any{}, "session_crons": []any{}})
	return nil
}

// orchestrate does a main's part the way Claude Code would through Bash:
// it runs `fleetd orchestrate ARGS` in the pane's environment (which names
// the fleet and this agent as the sender) and returns the rollup it
// printed, or what went wrong.
func (a *Agent) orchestrate(ctx context.Context, args []string) string {
	if a.cfg.Fleetd == "" {
		return "orchestrate failed: no fleetd executable configured"
	}
	cmd := exec.CommandContext(ctx, a.cfg.Fleetd, append([]string{"orchestrate"}, args...)...)
	cmd.Env = a.cfg.Env
	cmd.Dir = a.cfg.Cwd
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	a.logHook("orchestrate", stderr.Bytes())
	if err != nil {
		return fmt.Sprintf("orchestrate failed: %v: %s", err, lastLines(stderr.String(), 5))
	}
	return strings.TrimSpace(stdout.String())
}

// lastLines is the tail of s, n lines at most.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// spinner animates the working title until stopped.
type spinning struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s spinning) stop() {
	s.cancel()
	<-s.done
}

func (a *Agent) spin() spinning {
	ctx, cancel := context.WithCancel(context.Background())
	s := spinning{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			a.title(string(spinner[i%len(spinner)]) + " Claude Code")
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// hook runs `fleetd hook <name>` with Claude's payload on stdin, waiting
// for it as Claude does. A failure shows on screen and never stops the
// agent.
func (a *Agent) hook(ctx context.Context, name string, fields map[string]any) {
	if a.cfg.NoHooks {
		return
	}
	payload := map[string]any{"session_id": a.sid, "transcript_path": a.tp, "cwd": a.cfg.Cwd, "hook_event_name": name}
	for k, v := range fields {
		payload[k] = v
	}
	b, err := json.Marshal(payload)
	if err != nil {
		a.print(fmt.Sprintf("  ⎿ %s hook error: %v\r\n", name, err))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.cfg.Fleetd, "hook", name)
	cmd.Stdin = bytes.NewReader(b)
	cmd.Env = a.cfg.Env
	cmd.Dir = a.cfg.Cwd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		a.print(fmt.Sprintf("  ⎿ %s hook error: %v %s\r\n", name, err, strings.TrimSpace(stderr.String())))
	}
	if stderr.Len() > 0 {
		a.logHook(name, stderr.Bytes())
	}
}

// logHook keeps what a hook said on stderr beside the transcript, where
// Claude would show it in its transcript view.
func (a *Agent) logHook(name string, msg []byte) {
	f, err := os.OpenFile(strings.TrimSuffix(a.tp, ".jsonl")+".hooks.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s: %s\n", time.Now().Format(time.RFC3339Nano), name, bytes.TrimSpace(msg))
}

func (a *Agent) appendTranscript(line map[string]any) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(a.tp, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("simagent: transcript: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("simagent: transcript: %w", err)
	}
	return nil
}

// newUUID is a random (version 4) UUID, the shape of Claude's ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
