package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/turns"
)

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Log   events.Log
	Views projections.Views
	// Spawner starts the panes of a plan's sessions, for the roles a
	// job's caller may spawn; nil: sessions must be live already.
	Spawner Spawner
	// SessionRole is the role of sessions a plan does not configure
	// (default "main").
	SessionRole string
	Logger      *slog.Logger
	// Budgets gates every task's turn (Config.Budgets); nil: none.
	Budgets turns.Budget
	// NewID makes job ids; default ULIDs.
	NewID func() string
}

// RunRequest asks a Runner for a job.
type RunRequest struct {
	// Plan is the plan as JSON (the plan file's schema); empty resumes
	// Job from the log.
	Plan []byte
	// Job is the job id; empty makes a new one. An id the log holds
	// resumes that job.
	Job string
	// From is who the turns are from: the caller, whose tier puts the
	// job's sessions one below it.
	From string
	// ParentJob is the job this one is a sub-job of.
	ParentJob string
	// MaySpawn are the roles the caller may spawn: the plan's sessions of
	// other roles must be live already.
	MaySpawn []string
}

// Runner runs jobs in the background for callers that cannot wait on a
// process of their own — the shim's POST /jobs, for `fleetd mcp`'s
// orchestrate tool. Each job is an Orchestrator.Run (or Resume) that
// Run stops when its context ends: the jobs stop where they are, recorded
// in the log, and a later request for the same job id resumes them. Jobs
// may start before Run does (a shim may serve first), never after it
// returned.
type Runner struct {
	cfg RunnerConfig
	// jobsCtx is the jobs' context, cancelled when Run ends.
	jobsCtx context.Context
	cancel  context.CancelFunc

	mu      sync.Mutex
	closed  bool
	running map[string]runningJob
	wg      sync.WaitGroup
}

// runningJob is a job this runner runs: done closes when its run ends,
// stop ends the run early (Cancel).
type runningJob struct {
	done chan struct{}
	stop context.CancelFunc
}

// NewRunner returns a runner; it does no I/O and starts nothing.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	var errs []error
	if cfg.Log == nil {
		errs = append(errs, fmt.Errorf("%w: the runner needs a Log", ErrConfig))
	}
	if cfg.Views == nil {
		errs = append(errs, fmt.Errorf("%w: the runner needs Views", ErrConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NewID == nil {
		cfg.NewID = events.NewULIDSource(time.Now)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{cfg: cfg, jobsCtx: ctx, cancel: cancel, running: map[string]runningJob{}}, nil
}

// ErrRunnerStopped means a job was asked of a Runner whose Run has
// returned.
var ErrRunnerStopped = errors.New("job runner not running")

// Run lets the runner take jobs until ctx ends, then stops the jobs it
// started and waits for them.
func (r *Runner) Run(ctx context.Context) error {
	<-ctx.Done()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}

// Running is a channel closed when this runner's run of job ends, and
// whether it runs one.
func (r *Runner) Running(job string) (<-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rj, ok := r.running[job]
	return rj.done, ok
}

// Start checks the request and runs the job in the background; it returns
// the job id. A plan that breaks its schema is ErrInvalidPlan, a resume of
// a job the log lacks ErrJobUnknown; a job already running here is
// re-attached (its id comes back, nothing starts twice).
func (r *Runner) Start(ctx context.Context, req RunRequest) (string, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return "", ErrRunnerStopped
	}
	var plan Plan
	if len(req.Plan) > 0 {
		var err error
		if plan, err = ParsePlan(req.Plan); err != nil {
			return "", err
		}
	}
	job := req.Job
	if job == "" {
		job = r.cfg.NewID()
	}
	if err := events.ValidToken(job); err != nil {
		return "", fmt.Errorf("job id: %w", err)
	}
	if len(req.Plan) == 0 {
		known, err := jobs.Exists(ctx, r.cfg.Log, job)
		if err != nil {
			return "", err
		}
		if !known {
			return "", fmt.Errorf("%w: %s (give a plan to start it)", ErrJobUnknown, job)
		}
	}
	tier, err := TierOf(ctx, r.cfg.Log, r.cfg.Views, req.From)
	if err != nil {
		return "", err
	}
	var spawner Spawner = NoSpawner{}
	if r.cfg.Spawner != nil {
		spawner = allowedSpawner{Spawner: r.cfg.Spawner, roles: req.MaySpawn, caller: req.From}
	}
	sessions, err := NewSessions(SessionConfig{Log: r.cfg.Log, Views: r.cfg.Views, Spawner: spawner,
		Role: r.cfg.SessionRole, Tier: tier + 1, Parent: req.From})
	if err != nil {
		return "", err
	}
	o, err := New(Config{Log: r.cfg.Log, Views: r.cfg.Views, Sessions: sessions, From: req.From, ParentJob: req.ParentJob, NewID: r.cfg.NewID, Budgets: r.cfg.Budgets})
	if err != nil {
		return "", err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", ErrRunnerStopped
	}
	if _, ok := r.running[job]; ok {
		return job, nil
	}
	done := make(chan struct{})
	runCtx, stop := context.WithCancel(r.jobsCtx)
	r.running[job] = runningJob{done: done, stop: stop}
	r.wg.Go(func() {
		var err error
		if len(req.Plan) > 0 {
			_, err = o.Run(runCtx, plan, job)
		} else {
			_, err = o.Resume(runCtx, job)
		}
		if err != nil && runCtx.Err() == nil {
			r.cfg.Logger.Warn("job failed", "job", job, "from", req.From, "err", err)
		}
		// Out of the map before the channel closes: whoever wakes on it
		// reads the job's end from the log, not "running".
		r.mu.Lock()
		delete(r.running, job)
		r.mu.Unlock()
		stop()
		close(done)
	})
	return job, nil
}

// allowedSpawner starts sessions only of the roles its caller may spawn.
type allowedSpawner struct {
	Spawner
	roles  []string
	caller string
}

// ErrSpawnNotAllowed means a job's session needs a pane of a role its
// caller may not spawn.
var ErrSpawnNotAllowed = errors.New("spawn not allowed")

func (s allowedSpawner) Spawn(ctx context.Context, spec SpawnSpec) error {
	if !slices.Contains(s.roles, spec.Role) {
		return fmt.Errorf("%w: session %s needs an agent of role %q, which %s's role may not spawn (may_spawn); start it first or ask a lead whose role may",
			ErrSpawnNotAllowed, spec.Session, spec.Role, s.caller)
	}
	return s.Spawner.Spawn(ctx, spec)
}
