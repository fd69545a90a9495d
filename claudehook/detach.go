package claudehook

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// DetachFinisher returns an Options.Detach that hands a Stop hook's payload
// to a detached `<exe> hook <event> --finish FILE`: Claude Code may write
// the reply's transcript line only after its hooks return, so the
// finisher, not the hook, waits for it.
func DetachFinisher(exe, event string) func([]byte) error {
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
		cmd := exec.Command(exe, "hook", event, "--finish", f.Name())
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
// a second. It never fails: like the hook, it spools what it cannot append.
func Finish(ctx context.Context, event, file string, env func(string) string) {
	payload, err := os.ReadFile(file)
	os.Remove(file)
	if err != nil {
		return
	}
	_ = Run(ctx, event, bytes.NewReader(payload), env, Options{
		Timeout: 10 * time.Second, TranscriptWait: 6 * time.Second, NoHerdr: true,
	})
}
