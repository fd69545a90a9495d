package leadshim

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/turns"
)

// Agents stops and restarts agents in this host's herdr: the gateway's
// herdr bridge, adapted in package gateway. Its errors wrap ErrNotHere
// for an agent that is not live on this host, ErrNotRestartable for one
// fleetd cannot start again (an adopted pane), ErrRestarting for one
// whose restart runs.
type Agents interface {
	// Screen reads the agent's visible screen; it types nothing.
	Screen(ctx context.Context, agent string) (Screen, error)
	// Stop closes the agent's pane for good on behalf of by, and returns
	// once its exit ("stopped by <by>") is in the log.
	Stop(ctx context.Context, agent, by string) error
	// Restart starts the agent afresh on behalf of by and returns its new
	// registration once its session started.
	Restart(ctx context.Context, agent, by string) (events.AgentRegistered, error)
}

// ActionRequest is the body of POST /agents/{id}/stop, POST
// /agents/{id}/restart and POST /message/{id}/cancel: who acts, recorded
// in what the action writes. An empty body is from "lead".
type ActionRequest struct {
	From string `json:"from,omitempty"`
}

// Stopped answers POST /agents/{id}/stop.
type Stopped struct {
	Agent string `json:"agent"`
	By    string `json:"by"`
}

// Cancelled answers POST /message/{id}/cancel: the turn, failed
// cancelled.
type Cancelled struct {
	ID string `json:"id"`
	// Agent is the agent the turn was queued for; empty for a role turn
	// cancelled in its role's queue (Role).
	Agent string `json:"agent,omitempty"`
	Role  string `json:"role,omitempty"`
	By    string `json:"by"`
}

// actionFrom reads an action's body (empty: from "lead") and checks who
// acts: a name the log can record.
func actionFrom(r *http.Request) (string, *apiError) {
	var req ActionRequest
	if r.ContentLength != 0 {
		if aerr := decodeBody(r, &req); aerr != nil {
			return "", aerr
		}
	}
	if req.From == "" {
		req.From = "lead"
	}
	if err := events.ValidAgentID(req.From); err != nil {
		return "", fail(http.StatusBadRequest, "bad_from", `"from" names who acts: %v`, err)
	}
	return req.From, nil
}

// agentForAction is the roster's live agent id names, or the answer why
// an action cannot touch it: 404 unknown_agent, 409 agent_exited, 503
// no_herdr, 409 other_host (only the owning gateway touches a pane).
func (s *Server) agentForAction(id string) *apiError {
	a, ok := s.cfg.Views.Agent(id)
	switch {
	case !ok:
		return fail(http.StatusNotFound, "unknown_agent", "no agent %q in the roster", id)
	case a.Exited:
		return fail(http.StatusConflict, "agent_exited", "agent %s has exited", id)
	case s.cfg.Agents == nil:
		return fail(http.StatusServiceUnavailable, "no_herdr", "this fleetd (host %s) drives no herdr", s.cfg.Host)
	case a.Host != s.cfg.Host:
		return fail(http.StatusConflict, "other_host", "agent %s runs on host %s: ask that host's fleetd (this is %s)", id, a.Host, s.cfg.Host)
	}
	return s.healthError()
}

// agentsError maps an Agents port's error to its answer.
func agentsError(err error) *apiError {
	switch {
	case errors.Is(err, ErrNotHere):
		return fail(http.StatusConflict, "agent_exited", "%v", err)
	case errors.Is(err, ErrNotRestartable):
		return fail(http.StatusConflict, "not_restartable", "%v", err)
	case errors.Is(err, ErrRestarting):
		return fail(http.StatusConflict, "restarting", "%v", err)
	}
	if e := logError(err); e != nil {
		return e
	}
	return fail(http.StatusBadGateway, "herdr_failed", "%v", err)
}

// postStop stops an agent of this host for good.
func (s *Server) postStop(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	by, aerr := actionFrom(r)
	if aerr == nil {
		aerr = s.agentForAction(id)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if err := s.cfg.Agents.Stop(r.Context(), id, by); err != nil {
		writeError(w, agentsError(err))
		return
	}
	writeJSON(w, http.StatusOK, Stopped{Agent: id, By: by})
}

// postRestart starts an agent of this host afresh.
func (s *Server) postRestart(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	by, aerr := actionFrom(r)
	if aerr == nil {
		aerr = s.agentForAction(id)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	reg, err := s.cfg.Agents.Restart(r.Context(), id, by)
	if err != nil {
		writeError(w, agentsError(err))
		return
	}
	writeJSON(w, http.StatusOK, reg)
}

// cancelTries bounds how often a cancel reads the agent again after its
// gateway wrote first; each conflict means the agent's log moved.
const cancelTries = 5

// postCancel fails a turn still queued — for an agent, or in its role's
// queue — reason cancelled: 200 once the log holds it, 404 unknown_turn,
// 409 turn_done (final) or turn_typed (the agent has it: it cannot be
// taken back).
func (s *Server) postCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := ulid.ParseStrict(id); err != nil {
		writeError(w, fail(http.StatusBadRequest, "bad_id", "turn id %q is not a ULID", id))
		return
	}
	by, aerr := actionFrom(r)
	if aerr == nil {
		aerr = s.healthError()
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	c, aerr := s.cancelTurn(ctx, id, by)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// cancelTurn appends the turn's failure guarded by its agent's last
// sequence, as the gateway's typed is: whichever the log holds first
// decides, so a turn is never both typed and cancelled.
func (s *Server) cancelTurn(ctx context.Context, id, by string) (Cancelled, *apiError) {
	for range cancelTries {
		t, ok, err := s.cfg.Views.Turn(ctx, id)
		if err == nil && !ok {
			t, ok, err = s.turnAfterCatchUp(ctx, id)
		}
		switch {
		case err != nil:
			return Cancelled{}, fail(http.StatusServiceUnavailable, "unavailable", "read turn: %v", err)
		case !ok:
			return Cancelled{}, fail(http.StatusNotFound, "unknown_turn", "no turn %s", id)
		case t.State.Final():
			return Cancelled{}, fail(http.StatusConflict, "turn_done", "turn %s is %s already", id, t.State)
		case t.State != lifecycle.StateQueued:
			return Cancelled{}, fail(http.StatusConflict, "turn_typed", "turn %s is %s: %s has it, and a prompt typed is never taken back", id, t.State, t.Agent)
		case t.Agent == "":
			c, done, aerr := s.cancelUnassigned(ctx, t, by)
			if done || aerr != nil {
				return c, aerr
			}
			continue // an agent took it meanwhile: cancel it there
		}
		all, err := events.AgentAll(t.Agent)
		if err != nil {
			return Cancelled{}, fail(http.StatusBadRequest, "unknown_agent", "%v", err)
		}
		last, err := s.cfg.Log.LastSeq(ctx, all)
		if err == nil {
			err = s.cfg.Views.WaitSeq(ctx, last)
		}
		if err != nil {
			return Cancelled{}, fail(http.StatusServiceUnavailable, "unavailable", "read %s's log: %v", t.Agent, err)
		}
		if t2, ok, err := s.cfg.Views.Turn(ctx, id); err != nil || !ok || t2.State != lifecycle.StateQueued || t2.Agent != t.Agent {
			continue // it moved while the log was read: look again
		}
		ack, err := s.cfg.Log.Append(ctx, events.Event{Subject: t.Agent, Source: s.source, CorrelationID: id,
			Data: events.AgentFailed{Reason: events.ReasonCancelled, Message: "cancelled by " + by}}, events.ExpectLastSeqFor(last, all))
		switch {
		case err == nil:
			// Read-your-writes: a GET of the turn after the answer shows
			// it cancelled.
			if err := s.cfg.Views.WaitSeq(ctx, ack.Seq); err != nil {
				return Cancelled{}, fail(http.StatusServiceUnavailable, "unavailable", "the cancel is in the log (#%d), the views not yet: %v", ack.Seq, err)
			}
			return Cancelled{ID: id, Agent: t.Agent, By: by}, nil
		case errors.Is(err, events.ErrConcurrency):
			continue
		}
		if e := logError(err); e != nil {
			return Cancelled{}, e
		}
		return Cancelled{}, fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
	}
	return Cancelled{}, fail(http.StatusConflict, "busy", "turn %s: agent's log kept moving; try again", id)
}

// cancelUnassigned cancels a role turn no agent has taken yet
// (turns.Cancellation), racing its role's router without a lock: the
// cancel is appended guarded by the agents' queues as the views show them
// (no turn reached any agent since), and it carries the id of the turn's
// next assignment, so the router's assignment after it is a duplicate the
// log does not store. done is false when the turn moved meanwhile (an
// agent has it now): the caller reads it again.
func (s *Server) cancelUnassigned(ctx context.Context, t lifecycle.Turn, by string) (c Cancelled, done bool, aerr *apiError) {
	unavailable := func(err error) (Cancelled, bool, *apiError) {
		return Cancelled{}, false, fail(http.StatusServiceUnavailable, "unavailable", "read the agents' queues: %v", err)
	}
	queued, err := s.cfg.Log.LastSeq(ctx, turns.QueuedAll)
	if err == nil {
		err = s.cfg.Views.WaitSeq(ctx, queued)
	}
	if err != nil {
		return unavailable(err)
	}
	t, ok, err := s.cfg.Views.Turn(ctx, t.ID)
	if err != nil {
		return unavailable(err)
	}
	if !ok || t.Agent != "" || t.State != lifecycle.StateQueued {
		return Cancelled{}, false, nil
	}
	ev, err := turns.Cancellation(t, by)
	if err != nil {
		return Cancelled{}, false, nil
	}
	ev.Source = s.source
	ack, err := s.cfg.Log.Append(ctx, ev, events.ExpectLastSeqFor(queued, turns.QueuedAll))
	switch {
	case errors.Is(err, events.ErrConcurrency):
		return Cancelled{}, false, nil
	case err != nil:
		if e := logError(err); e != nil {
			return Cancelled{}, false, e
		}
		return Cancelled{}, false, fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
	}
	// The views tell what the log holds — read-your-writes for the
	// caller, and for a Duplicate which event has this id: the router's
	// assignment (the turn is an agent's: look again), or this cancel
	// stored once by a retry.
	if err := s.cfg.Views.WaitSeq(ctx, ack.Seq); err != nil {
		return unavailable(err)
	}
	if ack.Duplicate {
		if t, ok, err := s.cfg.Views.Turn(ctx, t.ID); err != nil || !ok || t.Reason != events.ReasonCancelled || t.Agent != "" {
			return Cancelled{}, false, nil
		}
	}
	return Cancelled{ID: t.ID, Role: t.Role, By: by}, true, nil
}

// Stop asks the shim to stop an agent of its host (POST
// /agents/{id}/stop) on behalf of from.
func (c *Client) Stop(ctx context.Context, agent, from string) (Stopped, error) {
	var out Stopped
	err := c.Do(ctx, http.MethodPost, "/agents/"+agent+"/stop", ActionRequest{From: from}, &out)
	return out, err
}

// Restart asks the shim to restart an agent of its host (POST
// /agents/{id}/restart) and returns its new registration.
func (c *Client) Restart(ctx context.Context, agent, from string) (events.AgentRegistered, error) {
	var out events.AgentRegistered
	err := c.Do(ctx, http.MethodPost, "/agents/"+agent+"/restart", ActionRequest{From: from}, &out)
	return out, err
}

// Cancel asks the shim to fail a queued turn cancelled (POST
// /message/{id}/cancel).
func (c *Client) Cancel(ctx context.Context, turn, from string) (Cancelled, error) {
	var out Cancelled
	err := c.Do(ctx, http.MethodPost, "/message/"+turn+"/cancel", ActionRequest{From: from}, &out)
	return out, err
}
