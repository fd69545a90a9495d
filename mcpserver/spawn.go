package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/leadshim"
)

// SpawnInput is the spawn tool's arguments.
type SpawnInput struct {
	Role    string `json:"role" jsonschema:"the role of the agent to start (the roles tool lists them); your own role must allow it (may_spawn in the roles file)"`
	Name    string `json:"name" jsonschema:"the new agent's id, unique in the fleet: lower-case letters, digits, - and _ (e.g. w-claude-7)"`
	Model   string `json:"model,omitempty" jsonschema:"a model instead of the role's"`
	Cwd     string `json:"cwd,omitempty" jsonschema:"the agent's working directory: an existing absolute directory its role allows (its cwd_roots; by default under the user's home, fleetd's working directory or the temp directory), never /; not for a role whose agents get their own worktree"`
	Session string `json:"session,omitempty" jsonschema:"a named session the agent serves, so others can send to session:<name>"`
}

// PlanTask is one task of an orchestrate plan (orchestrator.Task).
type PlanTask struct {
	ID           string       `json:"id" jsonschema:"the task's id: letters, digits, - and _; its reply becomes the context item rollup:<id>"`
	To           string       `json:"to" jsonschema:"who does it: role:<role>, an agent id, or session:<name>"`
	Instructions string       `json:"instructions,omitempty" jsonschema:"what to do, complete; the task's context slice is appended to it"`
	Command      string       `json:"command,omitempty" jsonschema:"instead of instructions, a slash command the target's role allows (/clear, /compact)"`
	Needs        []string     `json:"needs,omitempty" jsonschema:"ids of tasks that must reply first; their rollups are in this task's slice"`
	Context      *PlanContext `json:"context,omitempty" jsonschema:"context items beyond the needed rollups"`
	Budget       int          `json:"budget,omitempty" jsonschema:"the slice's byte budget (default the plan's)"`
}

// PlanContext selects a task's context (orchestrator.ContextSpec).
type PlanContext struct {
	Keys []string `json:"keys,omitempty" jsonschema:"item keys"`
	Tags []string `json:"tags,omitempty" jsonschema:"item tags"`
}

// PlanItem is a seed item of a plan's context store.
type PlanItem struct {
	Key  string   `json:"key"`
	Tags []string `json:"tags,omitempty"`
	Text string   `json:"text"`
}

// PlanSession configures a named session tasks address as session:<name>.
type PlanSession struct {
	Name  string `json:"name"`
	Role  string `json:"role,omitempty" jsonschema:"the role of the session's agent (default main); a session with no live agent is spawned only when your role may spawn this role"`
	Model string `json:"model,omitempty"`
	Cwd   string `json:"cwd,omitempty"`
	Cap   int64  `json:"cap,omitempty" jsonschema:"context cap in tokens, after which the session restarts with a fresh slice"`
}

// Plan is an orchestrate plan: the JSON of a `fleetd orchestrate` plan
// file (orchestrator.Plan), spelt out so the tool's schema guides a model.
type Plan struct {
	Goal     string        `json:"goal" jsonschema:"what the job is for"`
	Tasks    []PlanTask    `json:"tasks" jsonschema:"the tasks; independent ones run at once"`
	Context  []PlanItem    `json:"context,omitempty" jsonschema:"seed items of the job's context store (key, tags, text)"`
	Sessions []PlanSession `json:"sessions,omitempty" jsonschema:"named sessions the tasks use"`
	Budget   int           `json:"budget,omitempty" jsonschema:"default slice budget in bytes"`
}

// OrchestrateInput is the orchestrate tool's arguments.
type OrchestrateInput struct {
	Plan      *Plan  `json:"plan,omitempty" jsonschema:"the plan to run as a new job; leave it out to look at (or wait for) the job named by job"`
	Job       string `json:"job,omitempty" jsonschema:"with a plan: the job id to use (an existing one resumes it); without: the job to report on"`
	ParentJob string `json:"parent_job,omitempty" jsonschema:"with a plan: the job this one is a sub-job of (the job of the task you were given), so the job tree can be followed"`
	Resume    bool   `json:"resume,omitempty" jsonschema:"without a plan: resume the stopped job named by job from the log (finished tasks are not sent again)"`
	Async     bool   `json:"async,omitempty" jsonschema:"true: return the job id at once; look at it later with orchestrate job=<id>"`
	Timeout   string `json:"timeout,omitempty" jsonschema:"how long to wait for the job to end, a Go duration (default 10m); when it passes you get the job's progress and it runs on"`
}

func (s *Server) addJobTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "spawn",
		Description: "Start a new agent of a role in a new pane of the fleet's host, when your role may spawn that role. " +
			"Returns its registration (agent, host, pane, role) once its session has started; then send to it by name. " +
			"Refused for a role yours may not spawn, an unknown role, or a name already taken.",
	}, s.spawn)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "orchestrate",
		Description: "Run a plan as a job: tasks go out to their targets as soon as the tasks they need have replied, each with a " +
			"recorded slice of the job's context, and each reply joins the context as rollup:<task>. Blocks until the job's rollup " +
			"(or the timeout: then its progress, and it runs on), or returns the job id at once with async. " +
			"With only job: the job's progress, waiting up to timeout for its end; with resume: continue a stopped job.",
	}, s.orchestrate)
}

func (s *Server) spawn(ctx context.Context, _ *mcp.CallToolRequest, in SpawnInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Role) == "" || strings.TrimSpace(in.Name) == "" {
		return nil, nil, fmt.Errorf("spawn: name the role and the new agent's name")
	}
	reg, err := s.cfg.Fleet.Spawn(ctx, leadshim.SpawnRequest{Role: in.Role, Name: in.Name, From: s.cfg.Agent, FromRole: s.cfg.Role,
		Model: in.Model, Cwd: in.Cwd, Session: in.Session})
	if err != nil {
		return nil, nil, toolError("spawn", err)
	}
	return result(reg)
}

// JobResult is what orchestrate returns: the job's state, and what to do
// next when it has not ended.
type JobResult struct {
	leadshim.JobState
	Note string `json:"note,omitempty"`
}

func (s *Server) orchestrate(ctx context.Context, _ *mcp.CallToolRequest, in OrchestrateInput) (*mcp.CallToolResult, any, error) {
	timeout := in.Timeout
	if timeout == "" {
		timeout = "10m"
	}
	job := strings.TrimSpace(in.Job)
	switch {
	case in.Plan != nil:
		raw, err := json.Marshal(in.Plan)
		if err != nil {
			return nil, nil, fmt.Errorf("orchestrate: encode the plan: %w", err)
		}
		if len(raw) > s.cfg.MaxText {
			return nil, nil, fmt.Errorf("orchestrate: the plan is %d bytes, over the limit of %d: seed large context with the context tool instead", len(raw), s.cfg.MaxText)
		}
		acc, err := s.cfg.Fleet.StartJob(ctx, leadshim.JobStart{Plan: raw, Job: job, ParentJob: in.ParentJob, From: s.cfg.Agent, FromRole: s.cfg.Role})
		if err != nil {
			return nil, nil, toolError("orchestrate", err)
		}
		job = acc.Job
	case job == "":
		return nil, nil, fmt.Errorf("orchestrate: give a plan to run, or the job to report on")
	case in.Resume:
		acc, err := s.cfg.Fleet.StartJob(ctx, leadshim.JobStart{Job: job, From: s.cfg.Agent, FromRole: s.cfg.Role})
		if err != nil {
			return nil, nil, toolError("orchestrate", err)
		}
		job = acc.Job
	}
	wait := timeout
	if in.Async {
		wait = ""
	}
	st, err := s.cfg.Fleet.Job(ctx, job, wait)
	if err != nil {
		return nil, nil, toolError("orchestrate", err)
	}
	out := JobResult{JobState: st}
	switch st.Status {
	case "running":
		out.Note = "the job runs on: call orchestrate with job " + job + " to wait for it again"
	case "stopped":
		out.Note = "the job stopped before its end (fleetd restarted?): call orchestrate with job " + job + " and resume true to continue it"
	case "failed":
		out.Note = "the job failed: fix what its failed task says, then resume it (orchestrate job " + job + ", resume true)"
	}
	return result(out)
}
