package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fleetd/fleetd/claudehook"
)

// execSample is one command's execs: wall time, process start to exit,
// and the CPU each used (user and system, from its rusage).
type execSample struct{ wall, cpu Sample }

// hookExecs are the hook commands exec'd as Claude Code runs them, one
// after another in each round so the machine's load falls on all alike:
// `fleetd hook stop`, `fleetd-hook stop` (when it sits beside fleetd) and
// a program that does nothing, the floor of any exec here.
type hookExecs struct {
	fleetd, hook, nop, goNop execSample
	// hookPath is the fleetd-hook measured, "" when there is none.
	hookPath, nopPath string
	// goNopPath is an empty static Go program (goNop), "" when no Go
	// toolchain here could build one; goNopErr says why.
	goNopPath, goNopErr string
}

// nopProgram is the do-nothing program the hooks are measured beside:
// /bin/true, on every machine the bench runs on and needing no
// toolchain. It is a small dynamically linked C program; an empty static
// Go program takes longer to start (its runtime), so the floor it sets is
// the lower one.
const nopProgram = "/bin/true"

// buildGoNop builds an empty Go program without cgo, statically linked,
// into dir: the do-nothing floor of any Go hook — the runtime's own start
// (on a small VM, page faults at ~25 µs each) — which /bin/true, a small
// C program, is far below. It needs the go command; without it the row
// says so.
func buildGoNop(ctx context.Context, dir string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command on PATH to build it")
	}
	src := filepath.Join(dir, "gonop")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module gonop\n\ngo 1.21\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(src, "gonop")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v %s", err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// hookExecs execs each hook command Size.HookRuns times with a finished
// transcript, against the gateway's NATS.
func (r *fabricRun) hookExecs(ctx context.Context, exe string) (hookExecs, error) {
	dir := filepath.Join(r.dir, "hookbench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return hookExecs{}, err
	}
	tp := filepath.Join(dir, "session.jsonl")
	lines := []map[string]any{
		{"type": "user", "promptId": "p1", "sessionId": "s1", "message": map[string]any{"role": "user", "content": "hello"}},
		{"type": "assistant", "sessionId": "s1", "message": map[string]any{"id": "msg_1", "model": "claude-sim", "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": "SIM: hello"}}, "stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": 15, "output_tokens": 10}}},
	}
	var buf bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(l)
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(tp, buf.Bytes(), 0o644); err != nil {
		return hookExecs{}, err
	}
	env := append(os.Environ(), "FLEET_AGENT_ID=w-hookbench", "FLEET_ROLE=w-sim", "FLEET_HOST=bench",
		"FLEET_NATS_URL="+r.fab.Gateway.NATSURL(), "FLEET_SPOOL_DIR="+filepath.Join(dir, "spool"))
	payload, _ := json.Marshal(map[string]any{"session_id": "5a1c0e2f-3b4d-4c6e-8f90-a1b2c3d4e5f6", "transcript_path": tp, "cwd": dir, "hook_event_name": "Stop",
		"prompt_id": "p1", "stop_hook_active": false, "last_assistant_message": "SIM: hello"})
	h := hookExecs{hookPath: claudehook.HookBeside(exe), nopPath: nopProgram}
	if _, err := os.Stat(nopProgram); err != nil {
		h.nopPath = ""
	}
	if p, err := buildGoNop(ctx, dir); err != nil {
		h.goNopErr = err.Error()
	} else {
		h.goNopPath = p
	}
	for range r.Size.HookRuns {
		if err := h.fleetd.run(ctx, env, payload, exe, "hook", "stop"); err != nil {
			return h, err
		}
		if h.hookPath != "" {
			if err := h.hook.run(ctx, env, payload, h.hookPath, "stop"); err != nil {
				return h, err
			}
		}
		if h.nopPath != "" {
			if err := h.nop.run(ctx, env, payload, h.nopPath); err != nil {
				return h, err
			}
		}
		if h.goNopPath != "" {
			if err := h.goNop.run(ctx, env, payload, h.goNopPath); err != nil {
				return h, err
			}
		}
	}
	return h, nil
}

// run execs argv once with payload on stdin; a hook that says anything
// failed the bench's expectations (it appends silently).
func (s *execSample) run(ctx context.Context, env []string, payload []byte, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(payload)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil || len(out) > 0 {
		return fmt.Errorf("%v: %v %s", argv, err, out)
	}
	s.wall = append(s.wall, wall)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = append(s.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
	}
	return nil
}

// rows are the hooks' exec rows beside the do-nothing execs. The hook's
// targets are absolute (≤ 5 ms wall, ≤ 3 ms CPU); the excess over an
// empty static Go program is its Delta, what fleetd's hook adds to the
// start every Go program pays on this machine.
func (h hookExecs) rows() []Row {
	nopName := "do-nothing exec (" + h.nopPath + ")"
	goNopName := "do-nothing static Go program"
	cpuNote := func(s execSample) string {
		note := fmt.Sprintf("CPU per exec p50 %s (%s: %s", fmtMs(s.cpu.P50()), h.nopPath, fmtMs(h.nop.cpu.P50()))
		if h.goNopPath != "" {
			note += fmt.Sprintf("; an empty static Go program: %s", fmtMs(h.goNop.cpu.P50()))
		}
		return note + ")"
	}
	fleetd := Row{Name: "hook: fleetd hook stop, exec'd", N: len(h.fleetd.wall), Unit: UnitMs, P50: Ms(h.fleetd.wall.P50()),
		P99: Ms(h.fleetd.wall.P99()), Status: StatusNone,
		Note: "process start to exit against the gateway's NATS, the whole fleetd binary (agents whose settings an older fleetd wrote, and the sim agents); " + cpuNote(h.fleetd)}
	hook := Row{Name: "hook: fleetd-hook stop, exec'd", N: len(h.hook.wall), Unit: UnitMs, P50: Ms(h.hook.wall.P50()),
		P99: Ms(h.hook.wall.P99()), Target: "≤ 5ms p50, ≤ 3ms CPU",
		Note: "the hook binary fleetd's settings run (cmd/fleetd-hook, beside fleetd), as the row above; every turn runs two (UserPromptSubmit, Stop), on the whole turn's path and not in the agent floor (do-nothing hooks); " + cpuNote(h.hook)}
	hookCPU := Row{Name: "hook: fleetd-hook stop, CPU per exec", N: len(h.hook.cpu), Unit: UnitMs, P50: Ms(h.hook.cpu.P50()),
		P99: Ms(h.hook.cpu.P99()), Target: "≤ 3ms", Note: "user and system time of each exec (rusage)"}
	nop := Row{Name: "hook: " + nopName, N: len(h.nop.wall), Unit: UnitMs, P50: Ms(h.nop.wall.P50()), P99: Ms(h.nop.wall.P99()), Status: StatusNone,
		Note: "the floor of an exec on this machine now, run in turn with the hooks above: " + cpuNote(h.nop)}
	goNop := Row{Name: "hook: " + goNopName, N: len(h.goNop.wall), Unit: UnitMs, P50: Ms(h.goNop.wall.P50()), P99: Ms(h.goNop.wall.P99()), Status: StatusNone,
		Note: "func main() {}, CGO_ENABLED=0, run in turn with the hooks above: the Go runtime's start, which any Go hook pays; " + cpuNote(h.goNop)}
	base, baseCPU, baseName := h.nop.wall.P50(), h.nop.cpu.P50(), nopName
	if h.goNopPath != "" {
		base, baseCPU, baseName = h.goNop.wall.P50(), h.goNop.cpu.P50(), goNopName
	} else {
		goNop.Status, goNop.Note = StatusSkip, h.goNopErr
	}
	if h.nopPath != "" || h.goNopPath != "" {
		for _, r := range []*Row{&fleetd, &hook} {
			r.Base, r.BaseName = Ms(base), baseName
			r.Delta()
		}
		hookCPU.Base, hookCPU.BaseName = Ms(baseCPU), baseName+" CPU"
		hookCPU.Delta()
	}
	if h.nopPath == "" {
		nop.Status, nop.Note = StatusSkip, nopProgram+" is not on this machine"
	}
	if h.hookPath == "" {
		for _, r := range []*Row{&hook, &hookCPU} {
			r.Status, r.Note = StatusSkip, "no fleetd-hook beside the fleetd binary: build both (go build -o bin/ ./cmd/...)"
		}
	} else {
		hook.Check(h.hook.wall.P50() <= 5*time.Millisecond && h.hook.cpu.P50() <= 3*time.Millisecond)
		hookCPU.Check(h.hook.cpu.P50() <= 3*time.Millisecond)
	}
	return []Row{fleetd, hook, hookCPU, goNop, nop}
}
