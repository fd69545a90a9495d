package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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
	Quick  bool          `help:"A short run with smaller workloads (under 2 minutes)."`
	JSON   bool          `help:"Print the report as JSON, for tracking."`
	Sync   string        `help:"SyncAlways settings to measure: both, on or off." default:"both" enum:"both,on,off"`
	Stages []string      `help:"Only these stages: micro, rebuild, scale, turns, fabric (default all)." placeholder:"STAGE"`
	Claude string        `help:"Rows with the real Claude Code against the built-in fake API: auto (when claude is on PATH), on, off." default:"auto" enum:"auto,on,off"`
	Think  time.Duration `name:"fan-out-think" help:"How long each fan-out agent works (T; default 2s, 1s with --quick)."`

	// Size "tiny" is for the command's own test; Stage and StageSync make
	// a child run one stage.
	Size      string `hidden:"" enum:",full,quick,tiny" default:""`
	Stage     string `hidden:""`
	StageSync bool   `hidden:""`
}

// size is the run's workload sizes: --size, else full or --quick's, with
// --fan-out-think's T.
func (c *BenchCmd) size() bench.Size {
	name := c.Size
	if name == "" {
		name = "full"
		if c.Quick {
			name = "quick"
		}
	}
	s, _ := bench.SizeNamed(name)
	if c.Think > 0 {
		s.Think = c.Think
	}
	return s
}

// Run runs every stage (or, as a child, one) and prints the report. It
// fails when a stage could not run; a missed target is in the table, not
// an error.
func (c *BenchCmd) Run(ctx context.Context, g *Globals) error {
	if c.Stage != "" {
		return c.runStage(ctx, g)
	}
	plan := bench.Plan{Stages: c.Stages, Size: c.size()}
	switch c.Sync {
	case "on":
		plan.Syncs = []bool{true}
	case "off":
		plan.Syncs = []bool{false}
	}
	if err := plan.Validate(); err != nil {
		return err
	}
	rep, failed := bench.RunAll(ctx, plan, c.child(plan.Size))
	var err error
	if c.JSON {
		err = rep.JSON(os.Stdout)
	} else {
		err = rep.Print(os.Stdout)
	}
	if err != nil {
		return err
	}
	if failed != nil {
		return exitError{code: 1, err: fmt.Errorf("bench: %w", failed)}
	}
	return nil
}

// child runs each stage in a fresh fleetd process (`fleetd bench --stage`)
// and decodes its rows. It stays here, beside the flags it passes: the
// argv it builds is this command's own, parsed by kong in the child.
func (c *BenchCmd) child(size bench.Size) bench.StageFunc {
	return func(ctx context.Context, stage string, sync bool) ([]bench.Row, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		args := []string{"bench", "--stage", stage, "--stage-sync=" + strconv.FormatBool(sync), "--size", size.Name,
			"--claude", c.Claude, "--fan-out-think", size.Think.String()}
		cmd := exec.CommandContext(ctx, exe, args...)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		var rows []bench.Row
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			return nil, fmt.Errorf("stage output: %w", err)
		}
		return rows, nil
	}
}

// runStage is the child: run one stage, print its rows as JSON.
func (c *BenchCmd) runStage(ctx context.Context, g *Globals) error {
	rows, err := bench.RunStage(ctx, bench.StageConfig{Stage: c.Stage, Size: c.size(), Sync: c.StageSync, Claude: c.Claude,
		Version: version, Logger: g.quietLogger()})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rows)
}
