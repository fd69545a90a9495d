package herdrtest

import (
	"context"
	"errors"
	"slices"
	"time"
)

// errDeadline ends a wait whose server-side timeout passed.
var errDeadline = errors.New("deadline")

// watchPeer returns a context cancelled when the client closes its end, as
// herdr polls for during long waits: closing the socket cancels the wait.
func (c *call) watchPeer() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(c.ctx)
	c.s.wg.Go(func() {
		buf := make([]byte, 256)
		for {
			if _, err := c.conn.Read(buf); err != nil {
				cancel()
				return
			}
		}
	})
	return ctx, cancel
}

// waitFrom resolves the pane a wait is for (find runs under s.mu) and
// returns the hub's next event with it, so that the wait sees every
// change from this moment on.
func (s *Server) waitFrom(find func() (*pane, error)) (*pane, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := find()
	return p, s.hub.next, err
}

// waitUntil re-runs check (under s.mu) after every change until it reports
// done or an error, ctx ends, or deadline (zero: none) passes; at the
// deadline it checks one last time.
func (s *Server) waitUntil(ctx context.Context, deadline time.Time, check func() (bool, error)) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for expired := false; ; {
		s.mu.Lock()
		ok, err := check()
		ch := s.changed
		s.mu.Unlock()
		switch {
		case ok || err != nil:
			return err
		case expired:
			return errDeadline
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			expired = true
		}
	}
}

func deadlineAfter(ms *uint64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(*ms) * time.Millisecond)
}

// targetLocked resolves an agent target: a live agent pane's canonical id,
// or a unique agent name.
func (s *Server) targetLocked(target string) (*pane, error) {
	if p := s.panes[target]; p != nil && p.isAgent() {
		return p, nil
	}
	var found []*pane
	for _, p := range s.panes {
		if p.name != "" && p.name == target {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, errf("agent_not_found", "agent %s not found", target)
	default:
		return nil, errf("agent_target_ambiguous", "agent target %s is ambiguous", target)
	}
}

type agentTarget struct {
	Target string `json:"target"`
}

// onAgent serves a method whose params are {target}: it answers what fn
// makes of that agent's pane, or agent_not_found.
func (c *call) onAgent(fn func(*pane) any) (any, error) {
	var p agentTarget
	if err := c.decode(&p, "target"); err != nil {
		return nil, err
	}
	return c.s.withPane(func() (*pane, error) { return c.s.targetLocked(p.Target) }, fn)
}

func (c *call) agentList() (any, error) {
	if err := c.decode(&struct{}{}); err != nil {
		return nil, err
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	agents := []agentInfo{}
	for _, ws := range s.workspaces {
		for _, t := range ws.tabs {
			for _, p := range t.panes {
				if p.isAgent() {
					agents = append(agents, s.agentInfoLocked(p))
				}
			}
		}
	}
	return result("agent_list", "agents", agents), nil
}

func (c *call) agentGet() (any, error) {
	return c.onAgent(func(p *pane) any {
		return result("agent_info", "agent", c.s.agentInfoLocked(p))
	})
}

func (c *call) agentFocus() (any, error) {
	return c.onAgent(func(p *pane) any {
		c.s.focusLocked(p)
		return result("agent_info", "agent", c.s.agentInfoLocked(p))
	})
}

var defaultUntil = []string{stIdle, stDone, stBlocked}

func checkStatuses(field string, sts []string) error {
	for _, st := range sts {
		if err := oneOf(field, st, agentStatuses...); err != nil {
			return err
		}
	}
	return nil
}

// waitStatus waits until p's status is in until, counting transient
// statuses that hub events recorded since cursor, so a quick
// working → idle between two checks is not missed. It fails with
// agent_not_running when the pane goes or its agent changes.
func (s *Server) waitStatus(ctx context.Context, p *pane, until []string, cursor uint64, deadline time.Time) (agentInfo, error) {
	s.mu.Lock()
	agent0 := p.agent()
	s.mu.Unlock()
	var info agentInfo
	err := s.waitUntil(ctx, deadline, func() (bool, error) {
		if p.gone || p.agent() != agent0 {
			return false, errf("agent_not_running", "agent %s is no longer running", p.id)
		}
		hit := slices.Contains(until, p.status())
		for _, e := range s.hub.since(cursor) {
			if e.data.Type == "pane_agent_status_changed" && e.data.PaneID == p.id && slices.Contains(until, e.data.AgentStatus) {
				hit = true
			}
		}
		cursor = s.hub.next
		if hit {
			info = s.agentInfoLocked(p)
		}
		return hit, nil
	})
	if errors.Is(err, errDeadline) {
		return info, errf("timeout", "timed out waiting for agent status")
	}
	return info, err
}

func (c *call) agentWait() (any, error) {
	var p struct {
		Target    string   `json:"target"`
		Until     []string `json:"until"`
		TimeoutMS *uint64  `json:"timeout_ms"`
	}
	if err := c.decode(&p, "target"); err != nil {
		return nil, err
	}
	if err := checkStatuses("until", p.Until); err != nil {
		return nil, err
	}
	if len(p.Until) == 0 {
		p.Until = defaultUntil
	}
	deadline := deadlineAfter(p.TimeoutMS)
	s := c.s
	pn, cursor, err := s.waitFrom(func() (*pane, error) { return s.targetLocked(p.Target) })
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.watchPeer()
	defer cancel()
	info, err := s.waitStatus(ctx, pn, p.Until, cursor, deadline)
	if err != nil {
		return nil, err
	}
	return result("agent_info", "agent", info), nil
}

// stallWindow is how long agent.prompt with wait gives a non-working agent
// to show any state change after the prompt.
const stallWindow = 5 * time.Second

func (c *call) agentPrompt() (any, error) {
	var p struct {
		Target string `json:"target"`
		Text   string `json:"text"`
		Wait   *struct {
			Until     []string `json:"until"`
			TimeoutMS *uint64  `json:"timeout_ms"`
		} `json:"wait"`
	}
	if err := c.decode(&p, "target", "text"); err != nil {
		return nil, err
	}
	if p.Wait != nil {
		if err := checkStatuses("until", p.Wait.Until); err != nil {
			return nil, err
		}
	}
	if p.Text == "" {
		return nil, errf("empty_agent_prompt", "agent prompt text must not be empty")
	}
	s := c.s
	s.mu.Lock()
	pn, err := s.targetLocked(p.Target)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if pn.detected == "" || pn.agent() != pn.detected {
		s.mu.Unlock()
		return nil, errf("agent_not_ready", "agent %s is no longer the pane foreground process", p.Target)
	}
	seq0, status0, cursor := pn.stateSeq, pn.status(), s.hub.next
	s.mu.Unlock()

	if err := s.write(pn, []byte(s.paste(pn, p.Text))); err != nil {
		return nil, errf("agent_prompt_failed", "%s", err.(*apiError).msg)
	}
	// Enter goes 300 ms later as its own write, so the agent sees the end
	// of the paste before the submit (herdr's fix for swallowed Enters).
	s.wg.Go(func() {
		t := time.NewTimer(s.cfg.SubmitDelay)
		defer t.Stop()
		select {
		case <-t.C:
			s.write(pn, []byte("\r"))
		case <-s.done:
		}
	})
	if p.Wait == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return result("agent_prompted", "agent", s.agentInfoLocked(pn)), nil
	}

	ctx, cancel := c.watchPeer()
	defer cancel()
	deadline := deadlineAfter(p.Wait.TimeoutMS)
	if status0 != stWorking {
		stall := time.Now().Add(stallWindow)
		if !deadline.IsZero() && deadline.Before(stall) {
			stall = deadline
		}
		err := s.waitUntil(ctx, stall, func() (bool, error) {
			if pn.gone {
				return false, errf("agent_not_running", "agent %s is no longer running", pn.id)
			}
			return pn.stateSeq > seq0, nil
		})
		switch {
		case errors.Is(err, errDeadline) && !deadline.IsZero() && !deadline.After(stall):
			return nil, errf("timeout", "timed out waiting for agent status")
		case errors.Is(err, errDeadline):
			return nil, errf("agent_prompt_stalled", "agent prompt produced no observed state change within 5000 ms; the prompt may not have been submitted")
		case err != nil:
			return nil, err
		}
	}
	until := p.Wait.Until
	if len(until) == 0 {
		until = defaultUntil
	}
	info, err := s.waitStatus(ctx, pn, until, cursor, deadline)
	if err != nil {
		return nil, err
	}
	return result("agent_prompted", "agent", info), nil
}

// eventMatchTags are the EventMatch variants herdr's schema knows; only
// pane_agent_status_changed is actually supported by events.wait.
var eventMatchTags = []string{
	"workspace_created", "workspace_updated", "workspace_closed", "workspace_renamed", "workspace_moved",
	"workspace_focused", "tab_created", "tab_closed", "tab_renamed", "tab_moved", "tab_focused",
	"pane_created", "pane_closed", "pane_focused", "pane_moved", "pane_output_changed", "pane_exited",
	"pane_agent_detected", "pane_agent_status_changed",
}

func (c *call) eventsWait() (any, error) {
	var p struct {
		MatchEvent struct {
			Event       string  `json:"event"`
			PaneID      *string `json:"pane_id"`
			AgentStatus *string `json:"agent_status"`
		} `json:"match_event"`
		TimeoutMS *uint64 `json:"timeout_ms"`
	}
	if err := c.decode(&p, "match_event"); err != nil {
		return nil, err
	}
	m := p.MatchEvent
	if err := oneOf("match_event", m.Event, eventMatchTags...); err != nil {
		return nil, err
	}
	if m.Event != "pane_agent_status_changed" {
		return nil, errf("unsupported_event_wait_match", "events.wait supports only pane_agent_status_changed")
	}
	if m.PaneID == nil || m.AgentStatus == nil {
		return nil, errf("invalid_request", "invalid request: missing field `pane_id` or `agent_status`")
	}
	if err := oneOf("agent_status", *m.AgentStatus, agentStatuses...); err != nil {
		return nil, err
	}
	s := c.s
	pn, cursor, err := s.waitFrom(func() (*pane, error) { return s.paneLocked(*m.PaneID) })
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.watchPeer()
	defer cancel()
	var ev eventData
	err = s.waitUntil(ctx, deadlineAfter(p.TimeoutMS), func() (bool, error) {
		if pn.gone {
			return false, errf("pane_not_found", "pane %s not found", pn.id)
		}
		ev = eventData{Type: "pane_agent_status_changed", PaneID: pn.id, WorkspaceID: pn.tab.ws.id,
			AgentStatus: pn.status(), Agent: pn.agent()}
		if ev.AgentStatus == *m.AgentStatus {
			return true, nil
		}
		for _, e := range s.hub.since(cursor) {
			if e.data.Type == "pane_agent_status_changed" && e.data.PaneID == pn.id && e.data.AgentStatus == *m.AgentStatus {
				ev = e.data
				return true, nil
			}
		}
		cursor = s.hub.next
		return false, nil
	})
	if errors.Is(err, errDeadline) {
		return nil, errf("timeout", "timed out waiting for event match")
	}
	if err != nil {
		return nil, err
	}
	return result("wait_matched", "event", eventEnvelope{Event: ev.Type, Data: ev}), nil
}
