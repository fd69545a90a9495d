package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/leadshim"
)

// SendInput is the send tool's arguments.
type SendInput struct {
	To      string   `json:"to" jsonschema:"who gets the task: an agent id (w-claude-1), role:<role> for the next ready agent of a role (role:w-local), or session:<name> for the agent serving a named session"`
	Text    string   `json:"text" jsonschema:"the task, complete and self-contained: the agent sees only this text (name the files, constraints and the answer format you need)"`
	Timeout string   `json:"timeout,omitempty" jsonschema:"how long the turn may take, a Go duration such as 90s or 10m (default 10m); a blocking send that times out tells you the turn id to wait on"`
	Async   bool     `json:"async,omitempty" jsonschema:"true: return the turn id at once instead of waiting for the reply; collect it later with wait. Send several async tasks in a row to run them in parallel"`
	Notify  bool     `json:"notify,omitempty" jsonschema:"true: return the turn id at once; when the turn ends its reply is put in your inbox (call inbox to collect it). The way to hand out long jobs without holding a tool call open"`
	Context []string `json:"context,omitempty" jsonschema:"context selectors recorded with the turn: item keys and tag:<tag>; with job they are resolved against that job's context store and appended to the text"`
	Job     string   `json:"job,omitempty" jsonschema:"the job whose context store the context selectors are resolved against"`
}

// WaitInput is the wait tool's arguments.
type WaitInput struct {
	ID      string `json:"id" jsonschema:"the turn id a send returned"`
	Timeout string `json:"timeout,omitempty" jsonschema:"how long to wait for the turn to end, a Go duration (default 5m); on timeout the turn's current state comes back and you may wait again"`
}

// NoInput is the arguments of the tools that take none.
type NoInput struct{}

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "send",
		Description: "Send a task to another agent of the fleet and get its reply. By default it blocks until the agent replies " +
			"and returns the reply envelope (agent, status, reply, tokens, duration); with async it returns the turn id at once. " +
			"Address roles (role:<role>) rather than agent ids unless a specific agent holds the context you need. " +
			"To a main or lead (an agent that reads by pull) the text goes to its inbox and its answer comes to yours.",
	}, s.send)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "wait",
		Description: "Wait for a turn sent earlier (async, or a send that timed out) and return its envelope: " +
			"status replied with the reply, failed with the reason, or still queued/typed/submitted when the wait timed out.",
	}, s.wait)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "roster",
		Description: "List the fleet's agents: id, host, role, tier, status (idle, working, blocked), current turn, queue depth, model, tokens, and why one needs attention.",
	}, list("roster", s.cfg.Fleet.Roster))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "sessions",
		Description: "List the named, resumable agent sessions: name, the agent serving it, state, turns, tokens; send to one with to=session:<name>.",
	}, list("sessions", s.cfg.Fleet.Sessions))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "roles",
		Description: "List the roles you can route to (to=role:<role>): what each is for, its model, its cap, how many agents it has and how many are ready, and which roles its agents may spawn (may_spawn).",
	}, list("roles", s.cfg.Fleet.Roles))
}

// list is the handler of a tool that takes no arguments and returns what
// get lists (roster, sessions, roles); name words get's errors.
func list[T any](name string, get func(context.Context) (T, error)) mcp.ToolHandlerFor[NoInput, any] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, _ NoInput) (*mcp.CallToolResult, any, error) {
		v, err := get(ctx)
		if err != nil {
			return nil, nil, toolError(name, err)
		}
		return result(v)
	}
}

// target resolves session:<name> to the agent serving it (the shim takes
// agent ids and role:R only); anything else goes to the shim as it is.
func (s *Server) target(ctx context.Context, to string) (string, error) {
	to = strings.TrimSpace(to)
	name, ok := strings.CutPrefix(to, "session:")
	if !ok {
		return to, nil
	}
	sessions, err := s.cfg.Fleet.Sessions(ctx)
	if err != nil {
		return "", toolError("send", err)
	}
	for _, ss := range sessions {
		if ss.Name == name {
			if ss.Agent == "" || ss.State != "active" {
				return "", fmt.Errorf("send: session %q is %s and has no live agent; resume it first (fleetd orchestrate does)", name, ss.State)
			}
			return ss.Agent, nil
		}
	}
	return "", fmt.Errorf("send: no session named %q (the sessions tool lists them)", name)
}

func (s *Server) send(ctx context.Context, _ *mcp.CallToolRequest, in SendInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.To) == "" {
		return nil, nil, fmt.Errorf("send: to is empty: name an agent id, role:<role> or session:<name>")
	}
	if err := s.checkText("send: text", in.Text); err != nil {
		return nil, nil, err
	}
	to, err := s.target(ctx, in.To)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(to, "role:") {
		pull, err := s.pullReader(ctx, to)
		if err != nil {
			return nil, nil, toolError("send", err)
		}
		if pull {
			return s.deliver(ctx, to, in.Text)
		}
	}
	m := leadshim.Message{To: to, Text: in.Text, From: s.cfg.Agent, Timeout: in.Timeout, Context: in.Context, Job: in.Job, Notify: in.Notify}
	if in.Async || in.Notify {
		acc, err := s.cfg.Fleet.SendAsync(ctx, m)
		if err != nil {
			return nil, nil, toolError("send", err)
		}
		return result(acc)
	}
	env, err := s.cfg.Fleet.Send(ctx, m)
	if err != nil {
		return nil, nil, toolError("send", err)
	}
	return result(env)
}

func (s *Server) wait(ctx context.Context, _ *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.ID) == "" {
		return nil, nil, fmt.Errorf("wait: id is empty: pass the turn id a send returned")
	}
	timeout := in.Timeout
	if timeout == "" {
		timeout = "5m"
	}
	env, err := s.cfg.Fleet.Turn(ctx, in.ID, timeout)
	if err != nil {
		return nil, nil, toolError("wait", err)
	}
	return result(env)
}
