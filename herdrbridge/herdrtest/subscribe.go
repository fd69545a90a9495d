package herdrtest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"
)

// lifecycleTypes are the parameterless subscription types; each matches
// the hub events of the same name in snake_case.
var lifecycleTypes = []string{
	"workspace.created", "workspace.updated", "workspace.metadata_updated", "workspace.renamed",
	"workspace.moved", "workspace.reordered", "workspace.closed", "workspace.focused",
	"worktree.created", "worktree.opened", "worktree.removed",
	"tab.created", "tab.closed", "tab.focused", "tab.renamed", "tab.moved",
	"pane.created", "pane.closed", "pane.updated", "pane.focused", "pane.moved", "pane.exited",
	"pane.agent_detected", "layout.updated",
}

// subEntry is one subscription of an events.subscribe request. poll is
// called once per PollInterval under s.mu and yields at most one line: the
// pacing herdr's stream_subscriptions loop has.
type subEntry interface {
	poll(s *Server) any
}

// lifecycleEntry replays every retained matching hub event (its cursor
// starts at 0, as herdr's does), then follows live ones.
type lifecycleEntry struct {
	kind   string
	cursor uint64
}

func (e *lifecycleEntry) poll(s *Server) any {
	for _, ev := range s.hub.since(e.cursor) {
		e.cursor = ev.seq + 1
		if ev.data.Type == e.kind {
			return json.RawMessage(ev.line)
		}
	}
	return nil
}

// statusEntry is pane.agent_status_changed: it starts at the current hub
// sequence (no replay), emits each hub status event for its pane, and when
// the hub is quiet compares a snapshot, which is how focus-driven
// done → idle (no hub event) is seen. A dead pane makes it go silent.
type statusEntry struct {
	p       *pane
	filter  string
	cursor  uint64
	last    string
	initial bool
}

func (e *statusEntry) poll(s *Server) any {
	p := e.p
	line := func(status string) any {
		e.last = status
		if e.filter != "" && status != e.filter {
			return nil
		}
		return subEnvelope{Event: "pane.agent_status_changed", Data: statusEvent{
			PaneID: p.id, WorkspaceID: p.tab.ws.id, AgentStatus: status, Agent: p.agent()}}
	}
	if e.initial {
		e.initial = false
		return line(p.status())
	}
	for _, ev := range s.hub.since(e.cursor) {
		e.cursor = ev.seq + 1
		if ev.data.Type == "pane_agent_status_changed" && ev.data.PaneID == p.id {
			return line(ev.data.AgentStatus)
		}
	}
	if p.gone || p.status() == e.last {
		return nil
	}
	return line(p.status())
}

// outputEntry is pane.output_matched: edge-triggered, it fires when a line
// of the read matches and re-arms only once no line matches any more.
type outputEntry struct {
	p     *pane
	read  readParams
	match func(string) bool
	armed bool
}

func (e *outputEntry) poll(s *Server) any {
	if e.p.gone {
		return nil
	}
	r := s.readLocked(e.p, e.read)
	lines := strings.Split(r.Text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if e.match(lines[i]) {
			if !e.armed {
				return nil
			}
			e.armed = false
			return subEnvelope{Event: "pane.output_matched", Data: outputEvent{PaneID: e.p.id, MatchedLine: lines[i], Read: r}}
		}
	}
	e.armed = true
	return nil
}

// silentEntry stands for pane.scroll_changed: the fake has no scrollback
// position to report.
type silentEntry struct{}

func (silentEntry) poll(*Server) any { return nil }

type subParams struct {
	Type        string  `json:"type"`
	PaneID      *string `json:"pane_id"`
	AgentStatus *string `json:"agent_status"`
	Source      *string `json:"source"`
	Lines       *uint32 `json:"lines"`
	Match       *struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"match"`
	StripANSI *bool `json:"strip_ansi"`
}

// entryLocked validates one subscription as herdr does (probing the pane,
// compiling the regex) and builds its entry.
func (s *Server) entryLocked(raw json.RawMessage) (subEntry, error) {
	var sp subParams
	if err := json.Unmarshal(raw, &sp); err != nil {
		return nil, errf("invalid_request", "invalid request: %v", err)
	}
	if slices.Contains(lifecycleTypes, sp.Type) {
		return &lifecycleEntry{kind: strings.Replace(sp.Type, ".", "_", 1)}, nil
	}
	perPane := []string{"pane.agent_status_changed", "pane.output_matched", "pane.scroll_changed"}
	if err := oneOf("subscription type", sp.Type, append(lifecycleTypes, perPane...)...); err != nil {
		return nil, err
	}
	if sp.PaneID == nil {
		return nil, errf("invalid_request", "invalid request: missing field `pane_id`")
	}
	var p *pane
	switch sp.Type {
	case "pane.agent_status_changed":
		e := &statusEntry{}
		if sp.AgentStatus != nil {
			if err := oneOf("agent_status", *sp.AgentStatus, agentStatuses...); err != nil {
				return nil, err
			}
			e.filter = *sp.AgentStatus
		}
		var err error
		if p, err = s.paneLocked(*sp.PaneID); err != nil {
			return nil, err
		}
		e.p, e.cursor, e.last = p, s.hub.next, p.status()
		e.initial = e.filter != "" && e.filter == p.status()
		return e, nil
	case "pane.output_matched":
		if sp.Source == nil || sp.Match == nil {
			return nil, errf("invalid_request", "invalid request: missing field `source` or `match`")
		}
		rp := readParams{PaneID: *sp.PaneID, Source: *sp.Source, Lines: sp.Lines, StripANSI: sp.StripANSI}
		if err := rp.check(); err != nil {
			return nil, err
		}
		if err := oneOf("match type", sp.Match.Type, "substring", "regex"); err != nil {
			return nil, err
		}
		if rp.Source == "recent" {
			rp.Source = "recent_unwrapped"
		}
		value := sp.Match.Value
		match := func(l string) bool { return strings.Contains(l, value) }
		if sp.Match.Type == "regex" {
			re, err := regexp.Compile(value)
			if err != nil {
				return nil, errf("invalid_regex", "invalid regex: %v", err)
			}
			match = re.MatchString
		}
		var err error
		if p, err = s.paneLocked(*sp.PaneID); err != nil {
			return nil, err
		}
		return &outputEntry{p: p, read: rp, match: match, armed: true}, nil
	default:
		if _, err := s.paneLocked(*sp.PaneID); err != nil {
			return nil, err
		}
		return silentEntry{}, nil
	}
}

// subscribe serves events.subscribe: validate every entry (the first
// failure is one error line with the request id), acknowledge, then stream
// until the client closes the socket or stops reading for WriteTimeout.
func (c *call) subscribe() (any, error) {
	var p struct {
		Subscriptions []json.RawMessage `json:"subscriptions"`
	}
	if err := c.decode(&p, "subscriptions"); err != nil {
		return nil, err
	}
	s := c.s
	s.mu.Lock()
	entries := make([]subEntry, 0, len(p.Subscriptions))
	for _, raw := range p.Subscriptions {
		e, err := s.entryLocked(raw)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		entries = append(entries, e)
	}
	s.mu.Unlock()
	if err := s.writeLine(c.conn, successResponse{ID: c.id, Result: result("subscription_started")}, false); err != nil {
		return nil, nil
	}
	ctx, cancel := c.watchPeer()
	defer cancel()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		for _, e := range entries {
			s.mu.Lock()
			line := e.poll(s)
			s.mu.Unlock()
			if line == nil {
				continue
			}
			if err := s.writeLine(c.conn, line, true); err != nil {
				return nil, nil // a slow or gone subscriber is dropped
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-tick.C:
		}
	}
}
