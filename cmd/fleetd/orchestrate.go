package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
)

// OrchestrateCmd runs a plan as a job against a running fleetd: ready
// tasks go out as turns with their context slices, replies are folded
// back, and the job's rollup is printed. A main runs a sub-plan over its
// workers with the same command (FLEET_AGENT_ID and FLEET_JOB from its
// pane make it the sender and the parent job).
type OrchestrateCmd struct {
	Plan        string `arg:"" optional:"" type:"existingfile" help:"Plan file (JSON; schema: go doc github.com/fleetd/fleetd/orchestrator)."`
	Job         string `help:"Job id (default: a new one). Running an existing job id resumes it." placeholder:"ID"`
	Resume      string `help:"Resume this job from the log, with the plan it was created with." placeholder:"ID"`
	From        string `help:"Who the turns are from (default: this pane's agent, else 'orchestrator')." env:"FLEET_AGENT_ID"`
	ParentJob   string `name:"parent-job" help:"The job this one is a sub-job of." env:"FLEET_JOB" placeholder:"ID"`
	Tier        int    `help:"This orchestrator's tier; its sessions are one below (default: the sending agent's tier in the roster, else 0)." default:"-1"`
	SessionRole string `name:"session-role" help:"Role of sessions the plan does not configure." default:"main"`
	Budget      int    `help:"Default slice budget in bytes." default:"16384"`
	ContextCap  int64  `name:"context-cap" help:"Default session context cap in tokens (0: none)."`
	Spawn       bool   `help:"Start and resume session panes in this host's herdr (else sessions must already be live)."`
	herdrFlags
}

// Run executes the plan (or resumes the job) and prints its rollup.
func (c *OrchestrateCmd) Run(ctx context.Context, g *Globals) error {
	if (c.Plan == "") == (c.Resume == "") {
		return errors.New("orchestrate: give a plan file or --resume ID (not both)")
	}
	var plan orchestrator.Plan
	if c.Plan != "" {
		data, err := os.ReadFile(c.Plan)
		if err != nil {
			return err
		}
		if plan, err = orchestrator.ParsePlan(data); err != nil {
			return fmt.Errorf("%s: %w", c.Plan, err)
		}
	}
	from := c.From
	if from == "" {
		from = "orchestrator"
	}
	nc, js, err := dialNATS(g, "fleetd orchestrate")
	if err != nil {
		return err
	}
	defer nc.Close()
	log := events.New(js, events.Options{Source: "fleetd/" + g.hostName() + "/orchestrator"})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The client runs the projection's fold in memory: the materialized
	// projection is the gateway's, a second one would write the same
	// buckets, and this identity may not write them at all. It starts
	// from the gateway's checkpoint when it may read it.
	views := projections.New(log, js, projections.Options{Memory: true, Logger: g.Logger()})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := views.Run(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "views: %v\n", err)
		}
	}()

	tier, err := c.tier(ctx, log, views, from)
	if err != nil {
		return err
	}
	var spawner orchestrator.Spawner = orchestrator.NoSpawner{}
	if c.Spawn {
		b, done, err := c.bridge(ctx, g)
		if err != nil {
			return err
		}
		defer done()
		spawner = &gateway.SessionSpawner{Bridge: b, Herdr: herdrapi.New(c.socket()), Agents: views, Host: b.Host()}
	}
	sessions, err := orchestrator.NewSessions(orchestrator.SessionConfig{
		Log: log, Views: views, Spawner: spawner, Role: c.SessionRole,
		Tier: tier + 1, Parent: from, ContextCap: c.ContextCap,
	})
	if err != nil {
		return err
	}
	o, err := orchestrator.New(orchestrator.Config{
		Log: log, Views: views, Sessions: sessions, From: from, ParentJob: c.ParentJob, Budget: c.Budget,
		OnProgress: progressPrinter(os.Stderr),
	})
	if err != nil {
		return err
	}
	var res orchestrator.Result
	if c.Resume != "" {
		fmt.Fprintf(os.Stderr, "resuming job %s\n", c.Resume)
		res, err = o.Resume(ctx, c.Resume)
	} else {
		job := c.Job
		if job == "" {
			job = o.NewJobID()
		}
		fmt.Fprintf(os.Stderr, "job %s: %s (resume with: fleetd orchestrate --resume %s)\n", job, plan.Goal, job)
		res, err = o.Run(ctx, plan, job)
	}
	if err != nil {
		return err
	}
	fmt.Println(res.Rollup)
	return nil
}

// tier is --tier, else the sender's tier in the roster.
func (c *OrchestrateCmd) tier(ctx context.Context, log events.Log, views projections.Views, from string) (int, error) {
	if c.Tier >= 0 {
		return c.Tier, nil
	}
	return orchestrator.TierOf(ctx, log, views, from)
}

// socket is the herdr socket path the spawner closes panes through.
func (c *OrchestrateCmd) socket() string {
	if c.Herdr != "" {
		return c.Herdr
	}
	p, _ := herdrapi.SocketPath(os.Getenv)
	return p
}

// progressPrinter writes one time-stamped line per task transition.
func progressPrinter(w io.Writer) func(orchestrator.Progress) {
	var mu sync.Mutex
	return func(p orchestrator.Progress) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), p)
	}
}
