package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
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

// benchStages are the stages in table order.
var benchStages = []string{"fabric", "micro", "rebuild", "scale", "turns"}

// benchSize is one run's workload sizes.
type benchSize struct {
	name          string
	turns         int // whole turns (and floor turns) with the sim-agent
	claudeTurns   int
	hookRuns      int
	fanOut        int
	think         time.Duration
	roundTrips    int
	benchTime     time.Duration
	rebuild       int // events, SyncAlways off
	rebuildSync   int // events, SyncAlways on (its KV writes are fsync-bound)
	hosts, agents int
	queries       int
	turnsLow      int
	turnsHigh     int
}

var benchSizes = map[string]benchSize{
	"full": {name: "full", turns: 20, claudeTurns: 10, hookRuns: 20, fanOut: 100, think: 2 * time.Second, roundTrips: 2000,
		benchTime: time.Second, rebuild: 1_000_000, rebuildSync: 20_000, hosts: 10, agents: 1000, queries: 2000,
		turnsLow: 10_000, turnsHigh: 100_000},
	"quick": {name: "quick", turns: 10, claudeTurns: 3, hookRuns: 10, fanOut: 20, think: time.Second, roundTrips: 500,
		benchTime: 200 * time.Millisecond, rebuild: 50_000, rebuildSync: 5_000, hosts: 10, agents: 1000, queries: 500,
		turnsLow: 10_000, turnsHigh: 20_000},
	"tiny": {name: "tiny", turns: 3, claudeTurns: 2, hookRuns: 3, fanOut: 3, think: 300 * time.Millisecond, roundTrips: 50,
		benchTime: 20 * time.Millisecond, rebuild: 3_000, rebuildSync: 1_000, hosts: 2, agents: 50, queries: 50,
		turnsLow: 200, turnsHigh: 1_000},
}

func (c *BenchCmd) size() benchSize {
	name := c.Size
	if name == "" {
		name = "full"
		if c.Quick {
			name = "quick"
		}
	}
	s := benchSizes[name]
	if c.Think > 0 {
		s.think = c.Think
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
	for _, s := range c.Stages {
		if !slices.Contains(benchStages, s) {
			return fmt.Errorf("bench: unknown stage %q (want one of %v)", s, benchStages)
		}
	}
	size := c.size()
	rep := bench.Report{Machine: bench.ThisMachine(), Mode: size.name, Started: time.Now().UTC(), Load: bench.LoadAverage()}
	var failed []error
	for _, stage := range benchStages {
		if len(c.Stages) > 0 && !slices.Contains(c.Stages, stage) {
			continue
		}
		for _, sync := range c.syncs() {
			fmt.Fprintf(os.Stderr, "bench: %s, SyncAlways %v…\n", stage, onOff(sync))
			rows, err := c.child(ctx, stage, sync, size)
			if err != nil {
				failed = append(failed, fmt.Errorf("%s (sync %s): %w", stage, onOff(sync), err))
				rows = []bench.Row{{Name: stage + " stage", Sync: sync, Status: bench.StatusFail, Note: err.Error()}}
			}
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.Sort()
	var err error
	if c.JSON {
		err = rep.JSON(os.Stdout)
	} else {
		err = rep.Print(os.Stdout)
	}
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return exitError{code: 1, err: fmt.Errorf("bench: %w", errors.Join(failed...))}
	}
	return nil
}

func (c *BenchCmd) syncs() []bool {
	switch c.Sync {
	case "on":
		return []bool{true}
	case "off":
		return []bool{false}
	}
	return []bool{true, false}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// child runs one stage in a fresh fleetd process and decodes its rows.
func (c *BenchCmd) child(ctx context.Context, stage string, sync bool, size benchSize) ([]bench.Row, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"bench", "--stage", stage, "--stage-sync=" + strconv.FormatBool(sync), "--size", size.name,
		"--claude", c.Claude, "--fan-out-think", size.think.String()}
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

// runStage is the child: run one stage, print its rows as JSON.
func (c *BenchCmd) runStage(ctx context.Context, g *Globals) error {
	if c.Stage == "turns" {
		// Sample the heap finely enough to split ~10 MB between fleetd and
		// the embedded server (set before anything is allocated).
		runtime.MemProfileRate = 4 << 10
	}
	size := c.size()
	dir, err := os.MkdirTemp("", "fleetd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st := benchStage{size: size, sync: c.StageSync, dir: dir, claude: c.Claude, logger: g.quietLogger()}
	var rows []bench.Row
	switch c.Stage {
	case "micro":
		rows, err = st.micro(ctx)
	case "rebuild":
		rows, err = st.rebuild(ctx)
	case "scale":
		rows, err = st.scale(ctx)
	case "turns":
		rows, err = st.turns(ctx)
	case "fabric":
		rows, err = st.fabric(ctx)
	default:
		err = fmt.Errorf("bench: unknown stage %q", c.Stage)
	}
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Sync = c.StageSync
	}
	return json.NewEncoder(os.Stdout).Encode(rows)
}

// benchStage is one child's run.
type benchStage struct {
	size   benchSize
	sync   bool
	dir    string
	claude string
	logger *slog.Logger
}

func (s benchStage) progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench:   "+format+"\n", args...)
}
