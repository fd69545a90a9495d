package orchestrator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/turns"
)

// ClientConfig configures RunClient: a job run by a process of its own
// (`fleetd orchestrate`, a main's sub-plan), beside the gateways rather
// than inside one.
type ClientConfig struct {
	Log events.Log
	// JS is where the projection's checkpoint is read from, to start the
	// in-memory fold there when this identity may read it.
	JS jetstream.JetStream
	// Spawner starts and closes the job's session panes; it is given the
	// views the client folds, to find the panes of the agents it started.
	// Nil: sessions must be live already.
	Spawner func(projections.Views) Spawner
	// SessionRole is the role of sessions a plan does not configure.
	SessionRole string
	// From is who the turns are from (default "orchestrator"); Tier its
	// tier (negative: From's tier in the roster), its sessions one below.
	From string
	Tier int
	// Budgets makes the budget gate of the job's turns (Config.Budgets)
	// over the views the client folds; nil: no budgets.
	Budgets func(projections.Views) turns.Budget
	// ParentJob, Budget: as in Config. ContextCap: as in SessionConfig.
	ParentJob  string
	Budget     int
	ContextCap int64
	// Out hears what a person watching the run reads: the job's id and
	// how to resume it, one time-stamped line per task transition, and a
	// fold that failed. Default: discarded.
	Out    io.Writer
	Logger *slog.Logger
}

// RunClient runs plan as job (a new id when job is empty; an id the log
// holds resumes that job), or with resume set, resumes that job with the
// plan it was created with, and returns the result. It runs the
// projection's fold in memory for as long: the materialized projection is
// the gateway's, a second one would write the same buckets, and a
// client's identity may not write them at all.
func RunClient(ctx context.Context, cfg ClientConfig, plan Plan, job, resume string) (Result, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.From == "" {
		cfg.From = "orchestrator"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	views := projections.New(cfg.Log, cfg.JS, projections.Options{Memory: true, Logger: cfg.Logger})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		if err := views.Run(ctx); err != nil {
			fmt.Fprintf(cfg.Out, "views: %v\n", err)
		}
	})

	tier := cfg.Tier
	if tier < 0 {
		var err error
		if tier, err = TierOf(ctx, cfg.Log, views, cfg.From); err != nil {
			return Result{}, err
		}
	}
	var spawner Spawner = NoSpawner{}
	if cfg.Spawner != nil {
		spawner = cfg.Spawner(views)
	}
	sessions, err := NewSessions(SessionConfig{
		Log: cfg.Log, Views: views, Spawner: spawner, Role: cfg.SessionRole,
		Tier: tier + 1, Parent: cfg.From, ContextCap: cfg.ContextCap,
	})
	if err != nil {
		return Result{}, err
	}
	var budgets turns.Budget
	if cfg.Budgets != nil {
		budgets = cfg.Budgets(views)
	}
	o, err := New(Config{
		Log: cfg.Log, Views: views, Sessions: sessions, From: cfg.From, ParentJob: cfg.ParentJob, Budget: cfg.Budget,
		Budgets: budgets, OnProgress: progressPrinter(cfg.Out),
	})
	if err != nil {
		return Result{}, err
	}
	if resume != "" {
		fmt.Fprintf(cfg.Out, "resuming job %s\n", resume)
		return o.Resume(ctx, resume)
	}
	if job == "" {
		job = o.NewJobID()
	}
	fmt.Fprintf(cfg.Out, "job %s: %s (resume with: fleetd orchestrate --resume %s)\n", job, plan.Goal, job)
	return o.Run(ctx, plan, job)
}

// progressPrinter writes one time-stamped line per task transition; tasks
// report from their own goroutines.
func progressPrinter(w io.Writer) func(Progress) {
	var mu sync.Mutex
	return func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), p)
	}
}
