package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/demo"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/roles"
)

// KindsAuto runs every real agent CLI on PATH (StageConfig.Kinds);
// KindsNone runs none.
const (
	KindsAuto = "auto"
	KindsNone = "none"
)

// ParseKinds reads --kinds: auto, none, or a comma-separated list of
// the real CLIs' kinds (demo.RealKinds). auto is nil; none is empty.
func ParseKinds(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "", KindsAuto:
		return nil, nil
	case KindsNone:
		return []string{}, nil
	}
	var kinds []string
	var errs []error
	for k := range strings.SplitSeq(s, ",") {
		k = strings.TrimSpace(k)
		switch {
		case !slices.Contains(demo.RealKinds(), k):
			errs = append(errs, fmt.Errorf("bench: --kinds: unknown kind %q (want auto, none or some of %s)", k, strings.Join(demo.RealKinds(), ", ")))
		case !slices.Contains(kinds, k):
			kinds = append(kinds, k)
		}
	}
	return kinds, errors.Join(errs...)
}

// kindPick is what the fabric stage does with each real CLI's kind: run
// its rows, or skip them and say why.
type kindPick struct {
	run  []string
	skip map[string]string // kind → why its rows are skipped
}

// pickKinds decides, in demo.RealKinds' order, which real CLIs the
// fabric stage runs: those kinds asks for (nil: all) with claude's
// --claude on or off on top, each one only when onPath finds it. Every
// kind gets its rows or a skip row, so tables of runs on different
// machines line up.
func pickKinds(kinds []string, claude string, onPath func(kind string) bool) kindPick {
	p := kindPick{skip: map[string]string{}}
	for _, k := range demo.RealKinds() {
		asked := kinds == nil || slices.Contains(kinds, k)
		if k == roles.KindClaude && claude == "on" {
			asked = true
		} else if k == roles.KindClaude && claude == "off" {
			asked = false
		}
		_, bin := demo.CLIName(k)
		switch {
		case !asked:
			p.skip[k] = "not asked for (--kinds, --claude)"
		case !onPath(k):
			p.skip[k] = bin + " is not on PATH (" + demo.InstallHint(k) + ")"
		default:
			p.run = append(p.run, k)
		}
	}
	return p
}

// kindLabel names a kind's rows: "real Claude Code + fake API".
func kindLabel(kind string) string {
	name, _ := demo.CLIName(kind)
	return "real " + name + " + fake API"
}

// skipRows are the rows of a kind the stage does not run.
func skipRows(kind, why string) []Row {
	return []Row{{Name: "whole turn: " + kindLabel(kind), Unit: UnitMs, Status: StatusSkip, Note: why}}
}

// floorAgent is an agent of a kind run without fleetd, beside the one
// fleetd drives: its own pane of the same herdr, launched as fleetd
// launches the kind (the same command, environment and integration),
// but every hook it runs does nothing — `:` — except that the Stop hook
// (or the hook a kind runs for it) truncates a mark file, `: >mark`, a
// shell builtin: the turn's end, which the bench sees through inotify
// (markWatch). No fleetd process runs on its turn's path.
type floorAgent struct {
	name string
	kind herdrbridge.Kind
	pane string
	// marks get the time of each run of its Stop hook.
	marks chan time.Time
}

// floorHook is the do-nothing hook command for a hook of the
// command-line spelling arg ("stop", "user-prompt-submit"): `:`, and for
// Stop the mark.
func floorHook(mark string) func(arg string) string {
	return func(arg string) string {
		if arg == "stop" {
			return ": >" + herdrbridge.ShellQuote([]string{mark})
		}
		return ":"
	}
}

// floorClaudeSettings is a `claude --settings` file as fleetd's, but
// every hook the floor's do-nothing one.
func floorClaudeSettings(path, mark string) error {
	type command struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type matcher struct {
		Hooks []command `json:"hooks"`
	}
	hook := floorHook(mark)
	hooks := map[string][]matcher{}
	for _, h := range claudehook.Hooks {
		hooks[string(h)] = []matcher{{Hooks: []command{{Type: "command", Command: hook(h.Arg()), Timeout: 10}}}}
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": hooks, "permissions": map[string]any{"defaultMode": "default"}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// floorSimHook is the hook program a floor sim-agent runs: it execs the
// file fleetd-hook beside its --fleetd with the hook's name, so this
// script is that file.
func floorSimHook(dir, mark string) (fleetd string, err error) {
	script := "#!/bin/sh\n# The bench's do-nothing hooks: Stop marks the turn's end.\ncase \"$1\" in Stop) : >" +
		herdrbridge.ShellQuote([]string{mark}) + ";; esac\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, claudehook.HookName), []byte(script), 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, "fleetd"), nil
}

// launchFloor starts agent name of role in a pane of its own, in cwd,
// outside fleetd, with do-nothing hooks, and waits for its empty
// composer.
func (r *fabricRun) launchFloor(ctx context.Context, name string, role roles.Role, cwd string) (*floorAgent, error) {
	kind, err := herdrbridge.KindOf(role.Kind)
	if err != nil {
		return nil, err
	}
	state := filepath.Join(r.dir, "floor")
	mark := filepath.Join(r.markDir, name)
	env := role.LaunchEnv()
	maps.Copy(env, kind.LaunchEnv(state, name))
	settings := filepath.Join(state, name+"-settings.json")
	switch {
	case len(role.Command) > 1 && role.Command[1] == "sim-agent":
		// The sim-agent runs the hook beside its --fleetd.
		fleetd, err := floorSimHook(filepath.Join(state, name+"-bin"), mark)
		if err != nil {
			return nil, err
		}
		// Its do-nothing hooks run as Claude Code runs a settings
		// file's (the real Claude floor's): each waited for.
		role.Command = append(slices.Clone(role.Command), "--fleetd", fleetd, "--sync-hooks")
	case role.Kind == "" || role.Kind == roles.KindClaude:
		if err := os.MkdirAll(state, 0o700); err != nil {
			return nil, err
		}
		if err := floorClaudeSettings(settings, mark); err != nil {
			return nil, err
		}
	default:
		if err := kind.Install(herdrbridge.Install{StateDir: state, Agent: name, Cwd: cwd, Role: role, HookCommand: floorHook(mark)}); err != nil {
			return nil, fmt.Errorf("floor agent %s: %w", name, err)
		}
	}
	tab, err := r.herdr.CreateTab(ctx, herdrapi.CreateRequest{CWD: cwd, Label: name, Env: env})
	if err != nil {
		return nil, fmt.Errorf("floor agent %s: %w", name, err)
	}
	f := &floorAgent{name: name, kind: kind, pane: tab.RootPane.PaneID, marks: r.marks.marks(name)}
	if err := r.herdr.SendInput(ctx, f.pane, herdrbridge.ShellQuote(role.Argv(settings)), "enter"); err != nil {
		return nil, fmt.Errorf("floor agent %s: %w", name, err)
	}
	return f, nil
}

// waitFloorIdle waits until the floor agent's screen shows its composer
// empty and no turn at work.
func (r *fabricRun) waitFloorIdle(ctx context.Context, f *floorAgent, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		s, err := r.herdr.Read(ctx, herdrapi.ReadRequest{PaneID: f.pane, Source: herdrapi.SourceVisible})
		if err == nil && f.kind.ParseComposer(s.Text).Empty() && !f.kind.Working(s.Text) {
			return nil
		}
		select {
		case <-ctx.Done():
			shows := ""
			if err == nil {
				shows = lastLines(s.Text, 6)
			}
			return fmt.Errorf("floor agent %s never showed an idle composer: %w; it shows:\n%s", f.name, ctx.Err(), shows)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lastLines are the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var rows []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			rows = append(rows, l)
		}
	}
	return strings.Join(rows[max(0, len(rows)-n):], "\n")
}

// fixedPause is the gateway's pause between a paste and Enter where no
// sign tells the paste landed (herdrbridge's default EnterDelay, and
// herdr's agent.prompt's own).
const fixedPause = 300 * time.Millisecond

// landPoll is how often the gateway reads the screen while a text lands
// (herdrbridge's own poll): the floor waits for the sign no sooner.
const landPoll = 10 * time.Millisecond

// floorTurn types text into the floor agent as fleetd typed the kind's
// turn (method, AgentTyped.Method) and times it, from the first keystroke
// to its Stop hook's mark.
func (r *fabricRun) floorTurn(ctx context.Context, f *floorAgent, text, method string) (time.Duration, error) {
	if err := r.waitFloorIdle(ctx, f, time.Minute); err != nil {
		return 0, err
	}
	for len(f.marks) > 0 {
		<-f.marks // a mark of a turn already timed
	}
	t0 := time.Now()
	if err := r.typeAs(ctx, f, text, method); err != nil {
		return 0, fmt.Errorf("floor agent %s: %w", f.name, err)
	}
	select {
	case at := <-f.marks:
		return at.Sub(t0), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(time.Minute):
		s, _ := r.herdr.Read(ctx, herdrapi.ReadRequest{PaneID: f.pane, Source: herdrapi.SourceVisible})
		return 0, fmt.Errorf("floor agent %s: no Stop hook within a minute of %q; it shows:\n%s", f.name, text, lastLines(s.Text, 8))
	}
}

// typeAs types text into the pane the way method says the gateway does:
// herdr's agent.prompt (Enter after its own pause); a paste and Enter as
// soon as the kind's composer shows the text (at most LandTimeout);
// else a paste and Enter after the fixed pause.
func (r *fabricRun) typeAs(ctx context.Context, f *floorAgent, text, method string) error {
	if method == herdrbridge.MethodPrompt {
		_, err := r.herdr.Prompt(ctx, herdrapi.PromptRequest{Target: f.pane, Text: text})
		return err
	}
	if err := r.herdr.SendInput(ctx, f.pane, text); err != nil {
		return err
	}
	l, landed := f.kind.(herdrbridge.Lander)
	if method != herdrbridge.MethodLanded || !landed {
		sleep(ctx, fixedPause)
		return r.herdr.SendKeys(ctx, f.pane, "enter")
	}
	for start := time.Now(); time.Since(start) < herdrbridge.LandTimeout; {
		s, err := r.herdr.Read(ctx, herdrapi.ReadRequest{PaneID: f.pane, Source: herdrapi.SourceVisible})
		if err == nil {
			state := l.Landed(s.Text, text)
			if state == herdrbridge.LandingDone || (state == herdrbridge.LandingUnknown && time.Since(start) >= fixedPause) {
				break
			}
		}
		sleep(ctx, landPoll)
	}
	return r.herdr.SendKeys(ctx, f.pane, "enter")
}

// floorNote says what a kind's floor row measures ("" is the sim-agent).
func floorNote(kind string) string {
	how := "every hook it runs `:`, the Stop hook `: >mark` (shell builtins, in the shell the agent runs its hooks with)"
	switch kind {
	case "":
		how = "its hook program a shell script doing nothing, Stop `: >mark`, each hook waited for (--sync-hooks, as a plain settings file's; fleetd's settings run UserPromptSubmit async)"
	case roles.KindGemini:
		how = "every hook `:`, AfterAgent (its Stop) `: >mark` (shell builtins)"
	case roles.KindOpenCode, roles.KindPi:
		how = "fleetd's " + map[string]string{roles.KindOpenCode: "plugin", roles.KindPi: "extension"}[kind] +
			" in place (its own work, in the agent's process, counts as the agent's here) with every hook command `:`, Stop `: >mark` (shell builtins)"
	}
	return "a second agent of the kind in its own pane of the same herdr, launched as fleetd launches it but outside fleetd, " + how +
		": typed as fleetd typed the row above → its Stop hook ran, the mark seen at once through inotify (no polling); the typing, the agent, the model's answer and the agent's own hook mechanism, no process of fleetd's"
}

// closeFloor closes the floor agent's pane once its turns are timed: an
// idle agent still takes CPU (a TUI's timers), which the fan-out's rows
// would count.
func (r *fabricRun) closeFloor(ctx context.Context, f *floorAgent) {
	if err := r.herdr.ClosePane(ctx, f.pane); err != nil {
		r.progress("close floor agent %s: %v", f.name, err)
	}
}
