package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/fleetd/fleetd/bench"
)

// BenchCmd runs fleetd's fixed workloads on embedded NATS and the built-in
// herdr with simulated (and, when installed, real) agents, and prints one
// table of medians, p99s and ratios against baselines measured in the same
// run. Each stage runs in its own child process, so memory figures are a
// gateway's alone and one stage cannot disturb the next.
type BenchCmd struct {
	Quick   bool          `help:"A short run with smaller workloads (about 2 minutes on 2 cores with all five real agent CLIs on PATH, 1 with none)."`
	JSON    bool          `help:"Print the report as JSON, for tracking."`
	Sync    string        `help:"SyncAlways settings to measure: both, on or off." default:"both" enum:"both,on,off"`
	Stages  []string      `help:"Only these stages: micro, rebuild, scale, turns, fabric (default all)." placeholder:"STAGE"`
	Claude  string        `help:"Rows with the real Claude Code against the built-in fake API: auto (as --kinds says), on, off (adds it to or takes it from --kinds)." default:"auto" enum:"auto,on,off"`
	Runtime string        `help:"Where the fabric stage's agents and their floors run: herdr (fleetd's built-in herdr, PTY panes), agentapi (each under its own coder/agentapi server, which must be on PATH; its rows end \", under agentapi\"), or both (the fabric stage once under each, every agentapi row right below its herdr peer)." default:"herdr" enum:"herdr,agentapi,both"`
	Kinds   string        `help:"Real agent CLIs to run whole turns with against the built-in fake API, each beside its own floor: auto (every one on PATH), none, or a comma-separated list of claude, codex, gemini, opencode, pi; one not on PATH is a skip row saying how to install it." default:"auto" placeholder:"KINDS"`
	Think   time.Duration `name:"fan-out-think" help:"How long each fan-out agent works (T; default 2s, 1s with --quick)."`

	Compare string  `help:"Compare with an earlier --json report: each row's change, regressions beyond --noise flagged." type:"existingfile" placeholder:"OLD.json"`
	Against string  `help:"With --compare: compare with this --json report instead of running the bench." type:"existingfile" placeholder:"NEW.json"`
	Noise   float64 `help:"With --compare: how much worse (a fraction) a row may get before it counts as a regression." default:"0.2"`
	Strict  bool    `help:"With --compare: exit 3 when a row regressed."`
	Show    string  `help:"Print an earlier --json report as the table, without running anything." type:"existingfile" placeholder:"REPORT.json"`

	CPUProfile string `name:"cpu-profile" help:"Write each stage's CPU profile (its child process, the gateway and its embedded server) to DIR/<stage>-sync-<on|off>.pprof, for go tool pprof; DIR is made if missing." type:"path" placeholder:"DIR"`

	// Size "tiny" is for the command's own test; Stage and StageSync make
	// a child run one stage; Lead makes a child the fabric stage's lead,
	// calling the shim at that URL from a process of its own.
	Size      string `hidden:"" enum:",full,quick,tiny" default:""`
	Stage     string `hidden:""`
	StageSync bool   `hidden:""`
	Lead      string `hidden:""`
}

// size is the run's workload sizes, as the flags pick them.
func (c *BenchCmd) size() bench.Size { return bench.SizeFor(c.Size, c.Quick, c.Think) }

// Run runs every stage (or, as a child, one) and prints the report. It
// fails when a stage could not run; a missed target is in the table, not
// an error.
func (c *BenchCmd) Run(ctx context.Context, g *Globals) error {
	if c.Stage != "" {
		return c.runStage(ctx, g)
	}
	if c.Lead != "" {
		return bench.ServeLead(ctx, c.Lead, g.Token, os.Stdin, os.Stdout)
	}
	if c.Show != "" {
		r, err := bench.ReadReport(c.Show)
		if err != nil {
			return err
		}
		return r.Write(os.Stdout, false)
	}
	if c.Against != "" || c.Compare != "" {
		return c.compare(ctx)
	}
	_, err := c.run(ctx, os.Stdout)
	return err
}

// compare runs the bench (or reads --against) and sets it beside
// --compare's report.
func (c *BenchCmd) compare(ctx context.Context) error {
	if c.Compare == "" {
		return fmt.Errorf("--against needs --compare OLD.json")
	}
	if c.Noise <= 0 {
		return fmt.Errorf("--noise %v: want a fraction above 0 (0.2 is 20%%)", c.Noise)
	}
	before, err := bench.ReadReport(c.Compare)
	if err != nil {
		return err
	}
	now, runErr := bench.Report{}, error(nil)
	if c.Against != "" {
		if now, err = bench.ReadReport(c.Against); err != nil {
			return err
		}
	} else {
		// The run's own table (or JSON) first, as without --compare; the
		// comparison after it, also when a stage failed (its rows say so).
		if now, runErr = c.run(ctx, os.Stdout); now.Rows == nil {
			return runErr
		}
		fmt.Println()
	}
	out := os.Stdout
	if c.JSON {
		out = os.Stderr
	}
	n, err := bench.WriteComparison(out, before, now, c.Noise)
	if err != nil {
		return err
	}
	if n > 0 && c.Strict {
		return exitError{code: 3, err: fmt.Errorf("bench: %d rows regressed against %s", n, c.Compare)}
	}
	return runErr
}

// run runs the stages, prints the report to w and returns it.
func (c *BenchCmd) run(ctx context.Context, w io.Writer) (bench.Report, error) {
	plan := bench.Plan{Stages: c.Stages, Size: c.size(), Syncs: bench.SyncsNamed(c.Sync)}
	if err := plan.Validate(); err != nil {
		return bench.Report{}, err
	}
	if _, err := bench.ParseKinds(c.Kinds); err != nil {
		return bench.Report{}, err
	}
	if c.Runtime != "herdr" && (len(c.Stages) == 0 || slices.Contains(c.Stages, bench.StageFabric)) {
		// Before any stage runs, not minutes in, when the fabric's
		// first agent would not start.
		if err := lookAgentapi(ctx)(); err != nil {
			return bench.Report{}, fmt.Errorf("--runtime %s: %w", c.Runtime, err)
		}
	}
	if c.CPUProfile != "" {
		// Before any stage runs: a profile with nowhere to go would
		// fail the first stage only after its work.
		if err := os.MkdirAll(c.CPUProfile, 0o755); err != nil {
			return bench.Report{}, fmt.Errorf("--cpu-profile: %w", err)
		}
	}
	child, err := c.child(plan.Size)
	if err != nil {
		return bench.Report{}, err
	}
	rep, failed := bench.RunAll(ctx, plan, child)
	if err := rep.Write(w, c.JSON); err != nil {
		return rep, err
	}
	if failed != nil {
		return rep, exitError{code: 1, err: fmt.Errorf("bench: %w", failed)}
	}
	return rep, nil
}

// child runs each stage in a fresh fleetd process (`fleetd bench
// --stage`). The argv stays here, beside the flags it passes: the child
// parses it with this command's own flags.
func (c *BenchCmd) child(size bench.Size) (bench.StageFunc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	in := func(runtime string) bench.StageFunc {
		return bench.InChild(exe, func(stage string, sync bool) []string {
			args := []string{"bench", "--stage", stage, "--stage-sync=" + strconv.FormatBool(sync), "--size", size.Name,
				"--claude", c.Claude, "--kinds", c.Kinds, "--runtime", runtime, "--fan-out-think", size.Think.String()}
			if c.CPUProfile != "" {
				args = append(args, "--cpu-profile", c.CPUProfile)
			}
			return args
		})
	}
	if c.Runtime != "both" {
		return in(c.Runtime), nil
	}
	herdr, agentapi := in("herdr"), in(bench.RuntimeAgentapi)
	return func(ctx context.Context, stage string, sync bool) ([]bench.Row, error) {
		rows, err := herdr(ctx, stage, sync)
		if err != nil || stage != bench.StageFabric {
			return rows, err // only the fabric stage has agents
		}
		// One child per runtime, one after the other: neither's
		// agents load the machine while the other measures.
		more, err := agentapi(ctx, stage, sync)
		if err != nil {
			return nil, fmt.Errorf("under agentapi: %w", err)
		}
		return append(rows, more...), nil
	}, nil
}

// runStage is the child: run one stage, print its rows as JSON.
func (c *BenchCmd) runStage(ctx context.Context, g *Globals) error {
	return bench.ServeStage(ctx, bench.StageConfig{Stage: c.Stage, Size: c.size(), Sync: c.StageSync, Claude: c.Claude, Kinds: c.Kinds, Runtime: c.Runtime,
		Version: version, Logger: g.quietLogger(), CPUProfile: c.CPUProfile}, os.Stdout)
}
