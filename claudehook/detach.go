package claudehook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

// DetachFinisher returns an Options.Detach that hands a Stop hook's payload
// to a detached `<exe> <args…> --finish FILE` (args: `hook stop` for
// fleetd, `stop` for fleetd-hook): Claude Code may write the reply's
// transcript line only after its hooks return, so the finisher, not the
// hook, waits for it.
func DetachFinisher(exe string, args ...string) func([]byte) error {
	return func(payload []byte) error {
		f, err := os.CreateTemp("", "fleetd-hook-*.json")
		if err != nil {
			return err
		}
		if _, err := f.Write(payload); err != nil {
			f.Close()
			os.Remove(f.Name())
			return err
		}
		f.Close()
		cmd := exec.Command(exe, append(slices.Clip(args), "--finish", f.Name())...)
		// Its own session and no inherited pipes: Claude Code waits for the
		// hook's output to close, and must not wait for the finisher.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			os.Remove(f.Name())
			return err
		}
		return cmd.Process.Release()
	}
}

// Finish is the detached half of a Stop hook: the payload comes from the
// file the hook left (removed here), and the transcript gets seconds, not
// a second. usageOnly: the hook appended the reply, and the finisher
// appends the turn's usage event. It never fails: like the hook, it
// spools what it cannot append.
func Finish(ctx context.Context, event, file string, usageOnly, afterPrompt bool, env func(string) string) {
	payload, err := os.ReadFile(file)
	os.Remove(file)
	if err != nil {
		return
	}
	_ = Run(ctx, event, bytes.NewReader(payload), env, Options{
		Timeout: 10 * time.Second, TranscriptWait: 6 * time.Second, NoHerdr: true, UsageOnly: usageOnly, AfterPrompt: afterPrompt,
	})
}

// Invocation is one exec of a hook command: `fleetd-hook <event>`, or
// `fleetd hook <event>` in the settings an older fleetd wrote. Both run
// it, so both keep the same guarantees.
type Invocation struct {
	// Event is the hook's name, either spelling.
	Event string
	// Finish is the payload file a Stop hook left for its detached
	// finisher (--finish): the run is the finisher's.
	Finish string
	// UsageOnly: the finisher appends only the turn's usage
	// (--usage-only), the hook having appended its reply.
	UsageOnly bool
	// Timeout bounds the run (Options.Timeout).
	Timeout time.Duration
	// NoHerdr skips the pane.report_agent request.
	NoHerdr bool
	// AfterPrompt: the prompt's UserPromptSubmit hook ran async; wait
	// for it before appending (--after-prompt, Options.AfterPrompt).
	AfterPrompt bool
	// Self is the command line that runs this same hook again, finisher
	// flag aside (`/path/fleetd-hook stop`): a Stop hook whose transcript
	// lags detaches its finisher with it. Empty: it never detaches.
	Self []string
}

// Exec runs the hook (or its finisher) with Claude Code's payload on
// stdin. It returns nothing: a hook must never block or fail the agent,
// so every problem is said on stderr and the command exits 0.
func (in Invocation) Exec(ctx context.Context, stdin io.Reader, stderr io.Writer, env func(string) string) {
	if in.Finish != "" {
		Finish(ctx, in.Event, in.Finish, in.UsageOnly, in.AfterPrompt, env)
		return
	}
	var detach, detachUsage func([]byte) error
	if len(in.Self) > 0 {
		args := slices.Clip(in.Self[1:])
		if in.AfterPrompt {
			args = append(args, "--after-prompt")
		}
		detach = DetachFinisher(in.Self[0], args...)
		detachUsage = DetachFinisher(in.Self[0], append(slices.Clip(args), "--usage-only")...)
	}
	err := Run(ctx, in.Event, stdin, env, Options{Timeout: in.Timeout, NoHerdr: in.NoHerdr, AfterPrompt: in.AfterPrompt,
		Stderr: stderr, Detach: detach, DetachUsage: detachUsage})
	if err != nil {
		fmt.Fprintln(stderr, "fleetd hook:", err)
	}
}
