package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"
)

// Stages returns the stages of a whole run, in table order: fabric (whole
// turns through herdr panes, hooks and the shim), micro (appends), rebuild
// (the projection fold), scale (roster queries, the dashboard's fleet view
// and memory at 1000 agents)
// and turns (memory after many turns).
func Stages() []string { return []string{StageFabric, "micro", "rebuild", "scale", "turns"} }

// StageFabric is the one stage with agents, the one a runtime changes.
const StageFabric = "fabric"

// Size is one run's workload sizes; SizeNamed has the fixed ones, so two
// runs of a size measure the same work.
type Size struct {
	Name  string
	Turns int // whole turns (and floor turns) with the sim-agent
	// ClaudeTurns are the whole turns with the real Claude Code (and as
	// many floor turns), KindTurns with each other real CLI. Claude's
	// turn varies by tens of milliseconds from one to the next: three
	// put its excess over the floor anywhere from −14 to +30 ms between
	// runs, twenty within a few ms of +12.
	ClaudeTurns int
	KindTurns   int
	HookRuns    int // execs of `fleetd hook stop`
	FanOut      int // agents (and turns) of the fan-out
	// Think is how long each fan-out agent works (T).
	Think      time.Duration
	RoundTrips int           // raw JetStream round trips (the log hop)
	BenchTime  time.Duration // how long each micro benchmark runs
	// Rebuild is the log's size in events, with SyncAlways on and off
	// alike: the views' writes go in atomic batches on a syncing store, so
	// it no longer needs a smaller log, whose fixed costs (the buckets,
	// every agent's row and the last checkpoint) hid the fold's rate.
	Rebuild int
	// RebuildRuns is how many times the log is read raw and rebuilt, one
	// after the other: the row compares the medians. One of each swung
	// the ratio from 0.38× to 0.52× between runs on the 2-core VM, and
	// medians of three (--quick) from 0.48× to 0.57× for one build;
	// medians of eleven stayed within 0.05×.
	RebuildRuns int
	// PastWindow also times a restart once the log is older than the
	// stream's dedupe window (a wait of up to that window after the
	// fill), as a data dir that was not just written is restarted.
	PastWindow bool
	Hosts      int
	Agents     int
	Queries    int // roster queries, in-process and over HTTP
	TurnsLow   int // synthetic turns before the first memory reading
	TurnsHigh  int // … and before the second
}

// SizeNamed returns the size called full (the default), quick (a few
// minutes) or tiny (for the command's own test).
func SizeNamed(name string) (Size, bool) {
	switch name {
	case "full":
		return Size{Name: "full", Turns: 40, ClaudeTurns: 40, KindTurns: 10, HookRuns: 20, FanOut: 100, Think: 2 * time.Second, RoundTrips: 2000,
			BenchTime: time.Second, Rebuild: 1_000_000, RebuildRuns: 3, PastWindow: true, Hosts: 10, Agents: 1000, Queries: 2000,
			TurnsLow: 10_000, TurnsHigh: 100_000}, true
	case "quick":
		return Size{Name: "quick", Turns: 20, ClaudeTurns: 20, KindTurns: 5, HookRuns: 10, FanOut: 20, Think: time.Second, RoundTrips: 500,
			BenchTime: 200 * time.Millisecond, Rebuild: 50_000, RebuildRuns: 11, Hosts: 10, Agents: 1000, Queries: 500,
			TurnsLow: 10_000, TurnsHigh: 20_000}, true
	case "tiny":
		return Size{Name: "tiny", Turns: 3, ClaudeTurns: 2, KindTurns: 2, HookRuns: 3, FanOut: 3, Think: 300 * time.Millisecond, RoundTrips: 50,
			BenchTime: 20 * time.Millisecond, Rebuild: 3_000, RebuildRuns: 1, Hosts: 2, Agents: 50, Queries: 50,
			TurnsLow: 200, TurnsHigh: 1_000}, true
	}
	return Size{}, false
}

// StageFunc runs one stage at one SyncAlways setting and returns its rows.
// fleetd runs each in a fresh child process (which calls RunStage), so a
// stage's memory figures are its own and one stage cannot disturb the
// next.
type StageFunc func(ctx context.Context, stage string, sync bool) ([]Row, error)

// Plan is a whole run: which stages, in which SyncAlways settings, at
// which size.
type Plan struct {
	// Stages are the stages to run (default all, see Stages); the table
	// keeps Stages' order whatever order they are given in.
	Stages []string
	// Syncs are the SyncAlways settings to measure each stage in
	// (default on, then off).
	Syncs []bool
	Size  Size
	// Progress gets a line per stage as it starts (default os.Stderr).
	Progress io.Writer
}

// Validate reports every unknown stage at once.
func (p Plan) Validate() error {
	var errs []error
	for _, s := range p.Stages {
		if !slices.Contains(Stages(), s) {
			errs = append(errs, fmt.Errorf("bench: unknown stage %q (want one of %v)", s, Stages()))
		}
	}
	return errors.Join(errs...)
}

// RunAll runs the plan's stages through run and gathers the report. A
// stage that fails is a fail row in the report, and its error is joined
// into RunAll's; a missed target is in the table, not an error. An
// invalid plan runs nothing.
func RunAll(ctx context.Context, p Plan, run StageFunc) (Report, error) {
	if err := p.Validate(); err != nil {
		return Report{}, err
	}
	if len(p.Syncs) == 0 {
		p.Syncs = []bool{true, false}
	}
	if p.Progress == nil {
		p.Progress = os.Stderr
	}
	rep := Report{Machine: ThisMachine(), Mode: p.Size.Name, Started: time.Now().UTC(), Load: LoadAverage()}
	var failed []error
	for _, stage := range Stages() {
		if len(p.Stages) > 0 && !slices.Contains(p.Stages, stage) {
			continue
		}
		for _, sync := range p.Syncs {
			fmt.Fprintf(p.Progress, "bench: %s, SyncAlways %v…\n", stage, onOff(sync))
			rows, err := run(ctx, stage, sync)
			if err != nil {
				failed = append(failed, fmt.Errorf("%s (sync %s): %w", stage, onOff(sync), err))
				rows = []Row{{Name: stage + " stage", Sync: sync, Status: StatusFail, Note: err.Error()}}
			}
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.Sort()
	return rep, errors.Join(failed...)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// StageConfig is one stage's run.
type StageConfig struct {
	// Stage is one of Stages.
	Stage string
	Size  Size
	// Sync is the embedded server's SyncAlways.
	Sync bool
	// Claude says whether the fabric stage adds rows with the real Claude
	// Code: "on", "off" or "auto" (when claude is on PATH; the default).
	Claude string
	// Kinds are the real agent CLIs the fabric stage runs whole turns
	// with, each against its own floor: "auto" (every one on PATH; the
	// default), "none", or a comma-separated list (ParseKinds). Claude
	// "on" or "off" adds or removes Claude Code.
	Kinds string
	// Runtime is where the fabric stage's agents run: "herdr" (default:
	// `fleetd dev-herdr`'s PTY panes) or "agentapi" (`fleetd
	// agentapi-host`: each agent, and each floor, under its own agentapi
	// server); its rows say so.
	Runtime string
	// Fleetd is the fleetd executable the fabric stage runs agents
	// (`fleetd sim-agent`) and hooks (`fleetd hook stop`) with (default:
	// this process's executable, which must then be fleetd).
	Fleetd string
	// Version is what the stages' gateways announce.
	Version string
	// Logger is the components' logger (default slog.Default()).
	Logger *slog.Logger
	// Progress gets the stage's progress lines (default os.Stderr).
	Progress io.Writer
	// CPUProfile, when set, is a directory the stage writes its process's
	// CPU profile to, as <stage>-sync-<on|off>.pprof: where a row's time
	// goes, the gateway's and the embedded server's alike.
	CPUProfile string
}

// RunStage runs one stage in a temp dir it removes after, and returns its
// rows marked with the stage's SyncAlways. The turns stage sets
// runtime.MemProfileRate for the whole process to split the heap between
// fleetd and the embedded server: run it in a process of its own.
func RunStage(ctx context.Context, cfg StageConfig) ([]Row, error) {
	if cfg.Stage == "turns" {
		// Sample the heap finely enough to split ~10 MB between fleetd and
		// the embedded server (set before the stage allocates).
		runtime.MemProfileRate = 4 << 10
	}
	if cfg.Claude == "" {
		cfg.Claude = "auto"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Progress == nil {
		cfg.Progress = os.Stderr
	}
	if cfg.Fleetd == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bench: find fleetd: %w", err)
		}
		cfg.Fleetd = exe
	}
	dir, err := os.MkdirTemp("", "fleetd-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(filepath.Join(cfg.CPUProfile, cfg.profileName()))
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	st := stage{StageConfig: cfg, dir: dir}
	var rows []Row
	switch cfg.Stage {
	case "micro":
		rows, err = st.micro(ctx)
	case "rebuild":
		rows, err = st.rebuild(ctx)
	case "scale":
		rows, err = st.scale(ctx)
	case "turns":
		rows, err = st.turns(ctx)
	case StageFabric:
		rows, err = st.fabric(ctx)
	default:
		err = fmt.Errorf("bench: unknown stage %q", cfg.Stage)
	}
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Sync = cfg.Sync
	}
	return rows, nil
}

// startCPUProfile profiles the process's CPU into path until the returned
// func is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// ServeStage is the child's side of InChild: it runs one stage and writes
// its rows to w as the JSON InChild reads back.
func ServeStage(ctx context.Context, cfg StageConfig, w io.Writer) error {
	rows, err := RunStage(ctx, cfg)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(rows)
}

// stage is one stage's run: its config and its temp dir.
type stage struct {
	StageConfig
	dir string
}

func (s stage) progress(format string, args ...any) {
	fmt.Fprintf(s.Progress, "bench:   "+format+"\n", args...)
}

// InChild is the StageFunc that runs each stage in a fresh process: exe
// with args(stage, sync), which must call ServeStage with its stdout (its
// stderr is this process's).
func InChild(exe string, args func(stage string, sync bool) []string) StageFunc {
	return func(ctx context.Context, stage string, sync bool) ([]Row, error) {
		cmd := exec.CommandContext(ctx, exe, args(stage, sync)...)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("stage %s: %w", stage, err)
		}
		var rows []Row
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			return nil, fmt.Errorf("stage %s output: %w", stage, err)
		}
		return rows, nil
	}
}

// profileName is the stage's CPU profile file: <stage>-sync-<on|off>, and
// -agentapi for the fabric under agentapi, so bench --runtime both keeps
// both profiles.
func (cfg StageConfig) profileName() string {
	name := cfg.Stage + "-sync-" + onOff(cfg.Sync)
	if cfg.Stage == StageFabric && cfg.Runtime == RuntimeAgentapi {
		name += "-agentapi"
	}
	return name + ".pprof"
}
