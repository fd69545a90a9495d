package leadshim

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/roles"
)

// Spawner starts an agent in a pane of this host's herdr: the gateway's
// herdr bridge, adapted in package gateway. Its errors wrap
// ErrAgentExists for a name taken, roles.ErrBoundary for an environment
// that would cross the subscription boundary, roles.ErrUnknownRole for a
// role it does not know.
type Spawner interface {
	Spawn(ctx context.Context, req SpawnRequest) (events.AgentRegistered, error)
}

// SpawnRequest is the body of POST /agents: start an agent of Role named
// Name, on behalf of From, whose role must allow it (roles.Role.MaySpawn).
type SpawnRequest struct {
	Role string `json:"role"`
	Name string `json:"name"`
	// From is the caller's agent id. Its role is the roster's when it is a
	// registered agent; a caller outside fleetd (a lead) names it in
	// FromRole, trusted as far as the shim's token is.
	From     string `json:"from"`
	FromRole string `json:"from_role,omitempty"`
	// Model overrides the role's model; Cwd is the pane's working
	// directory (not for a role with a worktree).
	Model string `json:"model,omitempty"`
	Cwd   string `json:"cwd,omitempty"`
	// Parent is who the agent works for; default From.
	Parent string `json:"parent,omitempty"`
	// Session is the named session the agent serves.
	Session string `json:"session,omitempty"`
}

// callerRole is the role a request's caller acts in: its role in the
// roster when it is a live agent (a different from_role is refused: an
// agent does not pick its role), else the from_role it declares, which
// must be a role of the file.
func (s *Server) callerRole(from, fromRole string) (roles.Role, *apiError) {
	if err := events.ValidAgentID(from); err != nil {
		return roles.Role{}, fail(http.StatusBadRequest, "bad_from", `"from" names the caller: %v`, err)
	}
	name := fromRole
	if a, ok := s.cfg.Views.Agent(from); ok && !a.Exited {
		if fromRole != "" && fromRole != a.Role {
			return roles.Role{}, fail(http.StatusForbidden, "not_allowed", "%s is registered with role %q, not %q", from, a.Role, fromRole)
		}
		name = a.Role
	}
	if name == "" {
		return roles.Role{}, fail(http.StatusForbidden, "not_allowed",
			"%s is no agent of the roster: a caller outside fleetd names its role (from_role; fleetd mcp --role)", from)
	}
	r, err := s.cfg.Roles.Get(name)
	if err != nil {
		return roles.Role{}, fail(http.StatusForbidden, "not_allowed", "the caller's role: %v", err)
	}
	return r, nil
}

// postAgents spawns an agent on this host, when the caller's role may.
func (s *Server) postAgents(w http.ResponseWriter, r *http.Request) {
	var req SpawnRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		writeError(w, aerr)
		return
	}
	reg, aerr := s.spawn(r.Context(), req)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusCreated, reg)
}

func (s *Server) spawn(ctx context.Context, req SpawnRequest) (events.AgentRegistered, *apiError) {
	if strings.TrimSpace(req.Role) == "" {
		return events.AgentRegistered{}, fail(http.StatusBadRequest, "bad_role", `"role" names the role of the agent to start`)
	}
	role, err := s.cfg.Roles.Get(req.Role)
	if err != nil {
		return events.AgentRegistered{}, fail(http.StatusNotFound, "unknown_role", "%v", err)
	}
	if err := events.ValidAgentID(req.Name); err != nil {
		return events.AgentRegistered{}, fail(http.StatusBadRequest, "bad_name", `"name" is the new agent's id: %v`, err)
	}
	caller, aerr := s.callerRole(req.From, req.FromRole)
	if aerr != nil {
		return events.AgentRegistered{}, aerr
	}
	if err := caller.AllowsSpawn(req.Role); err != nil {
		return events.AgentRegistered{}, fail(http.StatusForbidden, "not_allowed", "%s: %v", req.From, err)
	}
	// The model goes into the agent's launch command: no control
	// character (a line editor's key) may ride in it.
	if err := roles.CheckWord("model", req.Model); err != nil {
		return events.AgentRegistered{}, fail(http.StatusBadRequest, "bad_model", `"model": %v`, err)
	}
	if req.Cwd != "" {
		// fleetd writes the agent's files (.fleet/) in its working
		// directory: only one the role allows, never / or /etc. Checked
		// after the caller's right to spawn, so the answer says nothing
		// of the host's directories to a caller that has none.
		if role.Worktree != nil {
			return events.AgentRegistered{}, fail(http.StatusBadRequest, "bad_cwd", `"cwd": role %q works in its own worktree of %s and takes no working directory`, role.Name, role.Worktree.Repo)
		}
		if err := role.CheckCwd(req.Cwd); err != nil {
			return events.AgentRegistered{}, fail(http.StatusBadRequest, "bad_cwd", `"cwd": %v`, err)
		}
	}
	if a, ok := s.cfg.Views.Agent(req.Name); ok && !a.Exited {
		return events.AgentRegistered{}, fail(http.StatusConflict, "name_taken", "agent %s is live (host %s, role %s): pick another name", req.Name, a.Host, a.Role)
	}
	if s.cfg.Spawner == nil {
		return events.AgentRegistered{}, fail(http.StatusServiceUnavailable, "no_herdr", "this fleetd (host %s) drives no herdr: spawn through the gateway of a host that does", s.cfg.Host)
	}
	if aerr := s.healthError(); aerr != nil {
		return events.AgentRegistered{}, aerr
	}
	if req.Parent == "" {
		req.Parent = req.From
	}
	reg, err := s.cfg.Spawner.Spawn(ctx, req)
	switch {
	case err == nil:
		return reg, nil
	case errors.Is(err, ErrAgentExists):
		return reg, fail(http.StatusConflict, "name_taken", "%v", err)
	case errors.Is(err, roles.ErrBoundary):
		return reg, fail(http.StatusForbidden, "boundary", "%v", err)
	case errors.Is(err, roles.ErrUnknownRole):
		return reg, fail(http.StatusNotFound, "unknown_role", "%v", err)
	case errors.Is(err, roles.ErrSandbox):
		return reg, fail(http.StatusBadRequest, "bad_sandbox", "%v", err)
	case errors.Is(err, roles.ErrCwd):
		return reg, fail(http.StatusBadRequest, "bad_cwd", "%v", err)
	case errors.Is(err, roles.ErrControlChar):
		return reg, fail(http.StatusBadRequest, "bad_word", "%v", err)
	}
	if e := logError(err); e != nil {
		return reg, e
	}
	return reg, fail(http.StatusBadGateway, "spawn_failed", "%v", err)
}

// Spawn asks the shim to start an agent (POST /agents) and returns its
// registration.
func (c *Client) Spawn(ctx context.Context, req SpawnRequest) (events.AgentRegistered, error) {
	var reg events.AgentRegistered
	err := c.Do(ctx, http.MethodPost, "/agents", req, &reg)
	return reg, err
}
