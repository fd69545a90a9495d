package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/fleetd/fleetd/budget"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
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
		var err error
		if plan, err = orchestrator.ReadPlan(c.Plan); err != nil {
			return err
		}
	}
	rc, err := roles.Load(c.Roles)
	if err != nil {
		return err
	}
	nc, js, err := dialNATS(g, "fleetd orchestrate")
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg := orchestrator.ClientConfig{
		Log: events.New(js, events.Options{Source: "fleetd/" + g.hostName() + "/orchestrator"}), JS: js,
		SessionRole: c.SessionRole, From: c.From, Tier: c.Tier, ParentJob: c.ParentJob, Budget: c.Budget, ContextCap: c.ContextCap,
		Out: os.Stderr, Logger: g.Logger(),
		// The roles' budgets hold for a job's turns as for any other.
		Budgets: func(views projections.Views) turns.Budget { return &budget.Checker{Roles: rc, Views: views} },
	}
	if c.Spawn {
		cb, err := c.bridge(ctx, g)
		if err != nil {
			return err
		}
		defer cb.Close()
		cfg.Spawner = func(views projections.Views) orchestrator.Spawner { return cb.SessionSpawner(views) }
	}
	res, err := orchestrator.RunClient(ctx, cfg, plan, c.Job, c.Resume)
	if err != nil {
		return err
	}
	fmt.Println(res.Rollup)
	return nil
}
