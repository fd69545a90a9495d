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

	"github.com/fleetd/fleetd/claudehook"
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
	// PasteLag is how long a bracketed paste takes to land in the
	// composer once its last byte arrived (restarting with each read
	// meanwhile): until then the box does not show it, and an Enter joins
	// it as a newline instead of submitting. Claude Code 2.1.328 showed a
	// paste 10–460 ms after it arrived, most often within 50 ms
	// (docs/claude-composer.md). Default 40 ms; negative: at once.
	PasteLag time.Duration
	// HookTimeout bounds each hook, as Claude's settings do. Default 10 s.
	HookTimeout time.Duration
	// SyncHooks waits for every hook, UserPromptSubmit too, and gives
	// none --after-prompt: Claude Code running a settings file without
	// async hooks (the bench's floor, whose hooks do nothing), not
	// fleetd's.
	SyncHooks bool
	// HookCPU, when set, is a file each hook's CPU time (user and
	// system, from the rusage its wait returned) is appended to, a line
	// "<hook> <microseconds>" per run: the bench's fan-out sums them,
	// where /proc's reaped-children times (10 ms ticks, per agent) read a
	// couple of millisecond-long hooks as nothing.
	HookCPU string
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
	if c.PasteLag == 0 {
		c.PasteLag = 40 * time.Millisecond
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

	// mu guards the terminal (writes to cfg.Out, the screen, the composer,
	// working), the input queue and sid.
	mu      sync.Mutex
	scr     screen
	ed      composer
	working bool // a turn runs: the status row shows above the box
	// queue holds what was submitted and not yet run, in order: Claude
	// queues prompts typed while it works and runs them afterwards.
	queue     []inputEvent
	wake      chan struct{} // something was queued
	confirm   chan bool     // a permission dialog was answered: yes (true) or no
	inputDone chan struct{} // the input loop ended (the terminal closed)

	sid string
	tp  string // transcript path
	// totalCost is the session's running cost (cost-state lines).
	totalCost float64
	modelIn   int64
	modelOut  int64
	// lastPrompt is the last prompt id, which SessionEnd carries.
	lastPrompt string
	// hooks are the async hooks (UserPromptSubmit) still running.
	hooks sync.WaitGroup
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
	a := &Agent{cfg: cfg, wake: make(chan struct{}, 1), confirm: make(chan bool, 1), inputDone: make(chan struct{})}
	a.scr = screen{out: cfg.Out, width: a.width, box: a.box}
	a.ed.slowPaste = cfg.PasteLag > 0
	return a, nil
}

// SessionID is the session's id, set once Run has started; /clear starts
// a new one.
func (a *Agent) SessionID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sid
}

// Screen sequences.
const (
	bracketedPasteOn  = "\x1b[?2004h"
	bracketedPasteOff = "\x1b[?2004l"
	idleTitle         = "✳ Claude Code"
)

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// raw writes sequences that leave the screen's layout alone.
func (a *Agent) raw(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scr.raw(s)
}

// above prints text above the prompt box.
func (a *Agent) above(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scr.above(s)
}

// update changes what the box shows and redraws it.
func (a *Agent) update(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f()
	a.scr.refresh()
}

func (a *Agent) title(t string) { a.raw("\x1b]0;" + t + "\x07") }

// box is what the bottom of the screen shows: the composer, under a
// status row while a turn works.
func (a *Agent) box(w int) []string {
	rows := a.ed.rows(w)
	if a.working {
		rows = append([]string{workingRow, ""}, rows...)
	}
	return rows
}

// width is the terminal's width, asked of whichever of Out and In is a
// terminal; 80 when neither is.
func (a *Agent) width() int {
	for _, f := range []any{a.cfg.Out, a.cfg.In} {
		if w := termWidth(f); w > 0 {
			return w
		}
	}
	return 80
}

// Run starts the session, serves prompts until "/exit", the end of input
// or ctx, and returns nil on a clean end. A read of In blocked when Run
// returns ends with In (the terminal closing).
func (a *Agent) Run(ctx context.Context) error {
	defer a.hooks.Wait() // an async hook's events are not cut off
	source := "startup"
	sid := newUUID()
	if a.cfg.Resume != "" {
		sid, source = a.cfg.Resume, "resume"
	}
	if err := os.MkdirAll(a.cfg.TranscriptDir, 0o755); err != nil {
		return fmt.Errorf("simagent: transcript dir: %w", err)
	}
	if err := a.startTranscript(sid); err != nil {
		return err
	}
	// Bracketed paste goes on before the box is first drawn: the box is
	// the sign of readiness a client waits for.
	a.raw(bracketedPasteOn)
	a.title(idleTitle)
	welcome := fmt.Sprintf("✻ Welcome to the fleetd simulated Claude Code (%s)\n  cwd: %s", a.cfg.Model, a.cfg.Cwd)
	if source == "resume" {
		welcome += "\n  resumed session " + sid
	}
	a.above(welcome)
	a.hook(ctx, "SessionStart", map[string]any{"source": source, "model": a.cfg.Model})
	a.update(a.scr.show)
	defer a.raw(bracketedPasteOff + "\r\n")

	inputCtx, stopInput := context.WithCancel(ctx)
	inputEnded := make(chan struct{})
	go func() {
		defer close(inputEnded)
		a.input(inputCtx)
	}()
	defer func() {
		stopInput()
		<-inputEnded
	}()

	for {
		ev, ok := a.next(ctx)
		if !ok {
			return nil // ctx ended or the terminal closed
		}
		// The history shows what the composer showed: a long paste as its
		// placeholder.
		if ev.kind == evBash {
			a.above("! " + indent(ev.shown))
			a.bash(ctx, ev.value)
			continue
		}
		a.above("❯ " + indent(ev.shown))
		if name, ok := slashCommand(ev.value); ok {
			exit, err := a.command(ctx, name)
			if exit || err != nil {
				return err
			}
			continue
		}
		if err := a.turn(ctx, ev.value); err != nil {
			return err
		}
		a.title(idleTitle)
	}
}

// startTranscript makes sid the session and starts its transcript unless
// it exists (a resumed session's grows).
func (a *Agent) startTranscript(sid string) error {
	a.mu.Lock()
	a.sid = sid
	a.mu.Unlock()
	a.tp = filepath.Join(a.cfg.TranscriptDir, sid+".jsonl")
	a.totalCost, a.modelIn, a.modelOut, a.lastPrompt = 0, 0, 0, ""
	if _, err := os.Stat(a.tp); err == nil {
		return nil
	}
	return a.appendTranscript(map[string]any{"type": "summary", "summary": "fleetd sim-agent session", "sessionId": sid})
}

// next waits for the next submitted command. It reports false once ctx
// ends, or the terminal closed and everything queued has run.
func (a *Agent) next(ctx context.Context) (inputEvent, bool) {
	for {
		a.mu.Lock()
		if len(a.queue) > 0 {
			ev := a.queue[0]
			a.queue = a.queue[1:]
			a.mu.Unlock()
			return ev, true
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return inputEvent{}, false
		case <-a.wake:
		case <-a.inputDone:
			a.mu.Lock()
			n := len(a.queue)
			a.mu.Unlock()
			if n == 0 {
				return inputEvent{}, false
			}
		}
	}
}

// escWait is how long input must stay quiet before a lone ESC counts as
// the Esc key rather than the start of a sequence split across reads.
const escWait = 50 * time.Millisecond

// input feeds the terminal's input to the composer, redraws the box when
// it changed and queues what was submitted. It runs until ctx ends or In
// does.
func (a *Agent) input(ctx context.Context) {
	defer close(a.inputDone)
	chunks := make(chan []byte)
	// The reader is left blocked in Read when ctx ends; it returns when
	// In closes, which is the terminal going away.
	go func() {
		defer close(chunks)
		buf := make([]byte, 4096)
		for {
			n, err := a.cfg.In.Read(buf)
			if n > 0 {
				select {
				case chunks <- bytes.Clone(buf[:n]):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var quiet, landed <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case b, ok := <-chunks:
			if !ok {
				return
			}
			quiet = nil
			if a.handle(func() []inputEvent { return a.ed.feed(b) }) {
				quiet = time.After(escWait)
			}
			a.mu.Lock()
			if a.ed.landing() {
				landed = time.After(a.cfg.PasteLag)
			}
			a.mu.Unlock()
		case <-quiet:
			quiet = nil
			a.handle(a.ed.flush)
		case <-landed:
			landed = nil
			a.handle(a.ed.land)
		}
	}
}

// handle runs one composer step under the lock, redraws, and passes the
// events on: a dialog's answer to the turn waiting for it, commands to
// the queue. Ctrl-C with nothing to clear does what it did before the
// composer was modelled: it never cuts a turn short, and idle there is
// nothing to interrupt. It reports whether input waits for more bytes.
func (a *Agent) handle(step func() []inputEvent) (pending bool) {
	a.mu.Lock()
	evs := step()
	pending = len(a.ed.dec.pending) > 0
	a.scr.refresh()
	queued := false
	for _, ev := range evs {
		switch ev.kind {
		case evConfirm, evDeny:
			select {
			case a.confirm <- ev.kind == evConfirm:
			default:
			}
		case evSubmit, evBash:
			a.queue = append(a.queue, ev)
			queued = true
		}
	}
	a.mu.Unlock()
	if queued {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	return pending
}

// command runs a slash command. None is a model turn: no prompt hooks, no
// transcript lines. It reports whether the session ended.
func (a *Agent) command(ctx context.Context, name string) (exit bool, err error) {
	switch name {
	case "exit":
		a.hook(ctx, "SessionEnd", map[string]any{"prompt_id": a.lastPrompt, "reason": "prompt_input_exit"})
		return true, nil
	case "clear":
		// A new session: its own id and transcript, its own costs.
		a.hook(ctx, "SessionEnd", map[string]any{"prompt_id": a.lastPrompt, "reason": "clear"})
		if err := a.startTranscript(newUUID()); err != nil {
			return false, err
		}
		a.hook(ctx, "SessionStart", map[string]any{"source": "clear", "model": a.cfg.Model})
		a.above("  ⎿  (no content)")
	case "compact":
		spin := a.spin()
		select {
		case <-ctx.Done():
		case <-time.After(a.cfg.Think):
		}
		spin.stop()
		a.title(idleTitle)
		if ctx.Err() != nil {
			return false, nil
		}
		a.hook(ctx, "SessionStart", map[string]any{"source": "compact", "model": a.cfg.Model})
		a.above("  ⎿  Compacted (ctrl+o to see full summary)")
	case "help":
		a.update(func() { a.ed.overlay = overlayHelp })
	case "add-dir":
		a.update(func() { a.ed.overlay = overlayAddDir })
	case "":
		a.above("  ⎿  Commands are in the form `/command [args]`")
	default:
		a.above("● Unknown command: /" + name)
	}
	return false, nil
}

// bashTimeout bounds a bash-mode command, as Claude's Bash tool's default
// timeout does.
const bashTimeout = 2 * time.Minute

// bash runs a bash-mode command as Claude does, bypassing the model: in
// the session's directory, its output printed, no prompt hooks.
func (a *Agent) bash(ctx context.Context, command string) {
	ctx, cancel := context.WithTimeout(ctx, bashTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = a.cfg.Cwd
	cmd.Env = a.cfg.Env
	out, err := cmd.CombinedOutput()
	text := strings.TrimRight(string(out), "\n")
	if err != nil {
		text = strings.TrimLeft(text+"\n"+err.Error(), "\n")
	}
	if text == "" {
		text = "(No content)"
	}
	a.above("  ⎿  " + strings.ReplaceAll(text, "\n", "\n     "))
}

// indent lays out a multi-line text under a two-column marker ("❯ ", "● ").
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

var (
	// Compiled on first use, not as every fleetd process (each hook run) starts.
	delayRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[delay=([0-9a-zµ.]+)\]`) })
	// orchestrateRE is the marker that makes the agent act as a main: it
	// runs `fleetd orchestrate ARGS` and replies with what it printed.
	// Compiled on first use, not as every fleetd process (each hook run) starts.
	orchestrateRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[orchestrate:([^\]]+)\]`) })
)

// turn runs one prompt: UserPromptSubmit, work, transcript, Stop.
func (a *Agent) turn(ctx context.Context, prompt string) error {
	promptID := newUUID()
	a.lastPrompt = promptID
	a.hook(ctx, "UserPromptSubmit", map[string]any{"prompt_id": promptID, "permission_mode": "default", "prompt": prompt})
	if err := a.appendTranscript(map[string]any{
		"type": "user", "promptId": promptID, "sessionId": a.sid, "uuid": newUUID(), "cwd": a.cfg.Cwd,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message":   map[string]any{"role": "user", "content": prompt},
	}); err != nil {
		return err
	}
	think := a.cfg.Think
	if m := delayRE().FindStringSubmatch(prompt); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			think = d
		}
	}

	spin := a.spin()
	if strings.Contains(prompt, "[block]") {
		spin.stop()
		a.title(idleTitle)
		// The dialog covers the box and takes the keys until answered.
		select {
		case <-a.confirm: // a stale answer must not approve this one
		default:
		}
		a.update(func() { a.ed.overlay = overlayPermission })
		a.hook(ctx, "Notification", map[string]any{"prompt_id": promptID,
			"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"})
		select {
		case <-ctx.Done():
			return nil
		case <-a.inputDone:
			return nil
		case yes := <-a.confirm:
			if !yes {
				// Claude Code interrupts a turn whose tool was refused:
				// it says so, writes no reply and runs no Stop hook, and
				// the box is back for what to do instead.
				a.above("  ⎿  Interrupted · What should Claude do instead?")
				return nil
			}
		}
		spin = a.spin()
	}
	var reply string
	if m := orchestrateRE().FindStringSubmatch(prompt); m != nil {
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
		a.above("● " + msg)
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
	a.above("● " + indent(reply))
	// Claude Code runs its Stop hook inside the turn: the title's spinner
	// has stopped (herdr's screen rules see idle, and fleetd's hook says
	// so) while the row above the box still offers "esc to interrupt"
	// until the hook returns; a prompt submitted then is queued.
	a.title(idleTitle)
	a.update(func() { a.working = true })
	a.hook(ctx, "Stop", map[string]any{"prompt_id": promptID, "permission_mode": "default",
		"effort": map[string]any{"level": "medium"}, "stop_hook_active": false,
		"last_assistant_message": reply, "background_tasks": []any{}, "session_crons": []any{}})
	a.update(func() { a.working = false })
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

// spinning is a working spell: the spinner title animates and the status
// row shows above the box until stop.
type spinning struct {
	cancel context.CancelFunc
	done   chan struct{}
	a      *Agent
}

func (s spinning) stop() {
	s.cancel()
	<-s.done
	s.a.update(func() { s.a.working = false })
}

func (a *Agent) spin() spinning {
	a.update(func() { a.working = true })
	ctx, cancel := context.WithCancel(context.Background())
	s := spinning{cancel: cancel, done: make(chan struct{}), a: a}
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

// hook runs the hook binary beside fleetd (`fleetd-hook <name>`, what
// fleetd's settings give the real Claude Code), else `fleetd hook <name>`,
// with Claude's payload on stdin, as Claude Code runs fleetd's settings:
// UserPromptSubmit async (the turn goes on at once), the hooks after it
// with --after-prompt, each waited for. A failure shows on screen and
// never stops the agent.
func (a *Agent) hook(ctx context.Context, name string, fields map[string]any) {
	if a.cfg.NoHooks {
		return
	}
	if name == "UserPromptSubmit" && !a.cfg.SyncHooks {
		a.hooks.Go(func() { a.runHook(context.WithoutCancel(ctx), name, fields) })
		return
	}
	a.runHook(ctx, name, fields)
}

// runHook runs one hook and waits for it.
func (a *Agent) runHook(ctx context.Context, name string, fields map[string]any) {
	payload := map[string]any{"session_id": a.sid, "transcript_path": a.tp, "cwd": a.cfg.Cwd, "hook_event_name": name}
	for k, v := range fields {
		payload[k] = v
	}
	b, err := json.Marshal(payload)
	if err != nil {
		a.above(fmt.Sprintf("  ⎿ %s hook error: %v", name, err))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HookTimeout)
	defer cancel()
	args := []string{name}
	switch name {
	case "Stop", "StopFailure", "Notification":
		if !a.cfg.SyncHooks {
			args = append(args, "--after-prompt")
		}
	}
	cmd := exec.CommandContext(ctx, a.cfg.Fleetd, append([]string{"hook"}, args...)...)
	if hook := claudehook.HookBeside(a.cfg.Fleetd); hook != "" && filepath.IsAbs(hook) {
		cmd = exec.CommandContext(ctx, hook, args...)
	}
	cmd.Stdin = bytes.NewReader(b)
	cmd.Env = a.cfg.Env
	cmd.Dir = a.cfg.Cwd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		a.above(fmt.Sprintf("  ⎿ %s hook error: %v %s", name, err, strings.TrimSpace(stderr.String())))
	}
	if stderr.Len() > 0 {
		a.logHook(name, stderr.Bytes())
	}
	if a.cfg.HookCPU != "" && cmd.ProcessState != nil {
		a.logHookCPU(name, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
}

// logHookCPU appends one hook run's CPU time to Config.HookCPU: one short
// write to a file opened for appending, so agents sharing the file do not
// mix their lines.
func (a *Agent) logHookCPU(name string, cpu time.Duration) {
	f, err := os.OpenFile(a.cfg.HookCPU, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d\n", name, cpu.Microseconds())
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
