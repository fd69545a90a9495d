package recording

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// LogEvent is one event of fleetd's log about the recorded agent, as the
// recorder read it: its type without the "fleet.agent." prefix, its turn
// (correlation id) and its payload.
type LogEvent struct {
	Time time.Time
	Type string
	Turn string
	Data json.RawMessage
}

// Build makes a recording of one scenario from the wire of herdr's socket
// and the agent's log events: each herdr request the bridge (or a hook)
// made becomes a step, each distinct screen is kept once, everything is
// scrubbed, and times count from the first step. Requests that say
// nothing of the agent's screen, keys or state (ping, snapshots, pane
// queries) are left out, and so are the panes no step of the log names
// when panes is not empty.
func Build(kind, scenario string, v Versions, wire []Wire, logs []LogEvent, s *Scrubber) *Recording {
	r := &Recording{Kind: kind, Scenario: scenario, Versions: v, Screens: []string{}}
	screens := map[string]int{}
	type timed struct {
		at time.Time
		st Step
	}
	var steps []timed
	reqs := map[int]request{}
	subs := map[int]bool{}
	lastEvent := map[string]time.Time{}
	updated := map[string]string{}
	for _, w := range wire {
		if w.Note != "" {
			steps = append(steps, timed{w.At, Step{Op: OpNote, Pane: s.Pane(w.NotePane), Text: s.String(w.Note)}})
			continue
		}
		if w.Request {
			var q request
			if json.Unmarshal(w.Line, &q) != nil {
				continue
			}
			reqs[w.Conn] = q
			if w.Context {
				subs[w.Conn] = true // its ack went before
				continue
			}
			st, ok := q.step(s)
			if ok && st.Op != OpRead {
				steps = append(steps, timed{w.At, st})
			}
			continue
		}
		q, ok := reqs[w.Conn]
		if !ok {
			continue
		}
		switch q.Method {
		case "pane.read":
			var resp struct {
				Result struct {
					Read struct {
						Text string `json:"text"`
					} `json:"read"`
				} `json:"result"`
			}
			if json.Unmarshal(w.Line, &resp) != nil || strings.Contains(string(w.Line), `"error"`) {
				continue
			}
			text := s.String(resp.Result.Read.Text)
			i, seen := screens[text]
			if !seen {
				i = len(r.Screens)
				screens[text] = i
				r.Screens = append(r.Screens, text)
			}
			steps = append(steps, timed{w.At, Step{Op: OpRead, Pane: s.Pane(q.Params.PaneID), Screen: i}})
		case "agent.get", "pane.get":
			// What herdr answered when asked about a pane (the bridge
			// asks when its hooks say a turn is over and herdr's events
			// do not yet): the status the next look is weighed with. A
			// step of the method ("agent_get"), the pane, herdr's status
			// of its agent (State) and the agent it names there (Text).
			if info, ok := herdrAnswer(w.Line); ok {
				steps = append(steps, timed{w.At, Step{Op: OpHerdr, Event: strings.ReplaceAll(q.Method, ".", "_"), Pane: s.Pane(info.PaneID), State: info.AgentStatus, Text: info.Agent}})
			}
		case "events.subscribe":
			if !subs[w.Conn] {
				subs[w.Conn] = true // the ack
				continue
			}
			st, ok := herdrEvent(w.Line, s)
			if !ok {
				continue
			}
			// The same event comes on each connection subscribed to it
			// (the bridge's and a spawning client's): keep it once.
			key := st.Event + "|" + st.Pane + "|" + st.State
			if t, ok := lastEvent[key]; ok && w.At.Sub(t) < 250*time.Millisecond {
				continue
			}
			lastEvent[key] = w.At
			// A pane's updates (its title redrawn with each spinner
			// frame) count only when the agent's status in them changes.
			if st.Event == "pane_updated" {
				if updated[st.Pane] == st.State {
					continue
				}
				updated[st.Pane] = st.State
			}
			steps = append(steps, timed{w.At, st})
		}
	}
	for _, e := range logs {
		var data map[string]any
		if len(e.Data) > 0 && json.Unmarshal(e.Data, &data) != nil {
			continue
		}
		if data != nil {
			data = s.Value(data).(map[string]any)
		}
		st := Step{Op: OpLog, Event: e.Type, Data: data}
		if e.Turn != "" {
			st.Turn = s.String(e.Turn)
		}
		if p, ok := data["pane"].(string); ok {
			st.Pane = p
		}
		steps = append(steps, timed{e.Time, st})
	}
	slices.SortStableFunc(steps, func(a, b timed) int { return a.at.Compare(b.at) })
	if len(steps) > 0 {
		t0 := steps[0].at
		for _, x := range steps {
			x.st.At = x.at.Sub(t0).Milliseconds()
			r.Steps = append(r.Steps, x.st)
		}
	}
	return r
}

// request is a herdr request line, with the params the steps use.
type request struct {
	Method string `json:"method"`
	Params struct {
		PaneID string   `json:"pane_id"`
		Target string   `json:"target"`
		Text   string   `json:"text"`
		Keys   []string `json:"keys"`
		State  string   `json:"state"`
		Source string   `json:"source"`
		Agent  string   `json:"agent"`
	} `json:"params"`
}

// step is the request's step, if it is one a recording keeps.
func (q request) step(s *Scrubber) (Step, bool) {
	p := q.Params
	switch q.Method {
	case "pane.read":
		return Step{Op: OpRead, Pane: s.Pane(p.PaneID)}, true
	case "pane.send_input":
		return Step{Op: OpInput, Pane: s.Pane(p.PaneID), Text: s.String(p.Text), Keys: p.Keys}, true
	case "pane.send_keys":
		return Step{Op: OpKeys, Pane: s.Pane(p.PaneID), Keys: p.Keys}, true
	case "agent.prompt":
		return Step{Op: OpPrompt, Pane: s.Pane(p.Target), Text: s.String(p.Text)}, true
	case "pane.report_agent":
		return Step{Op: OpReport, Pane: s.Pane(p.PaneID), State: p.State, Event: p.Source}, true
	}
	return Step{}, false
}

// herdrEvent is a subscription's event line as a step: lifecycle events
// by name, a status change with its status.
func herdrEvent(line []byte, s *Scrubber) (Step, bool) {
	var ev struct {
		Event string `json:"event"`
		Data  struct {
			PaneID      string `json:"pane_id"`
			AgentStatus string `json:"agent_status"`
			Agent       string `json:"agent"`
			Pane        struct {
				PaneID      string `json:"pane_id"`
				AgentStatus string `json:"agent_status"`
			} `json:"pane"`
		} `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Event == "" {
		return Step{}, false
	}
	pane, state := ev.Data.PaneID, ev.Data.AgentStatus
	if pane == "" {
		pane, state = ev.Data.Pane.PaneID, ev.Data.Pane.AgentStatus
	}
	if ev.Event == "pane_agent_detected" && ev.Data.Agent != "" {
		state = ev.Data.Agent
	}
	return Step{Op: OpHerdr, Event: strings.ReplaceAll(ev.Event, ".", "_"), Pane: s.Pane(pane), State: state}, true
}

// paneInfo is the part of herdr's answer to agent.get (result.agent) or
// pane.get (result.pane) a recording keeps.
type paneInfo struct {
	PaneID      string `json:"pane_id"`
	Agent       string `json:"agent"`
	AgentStatus string `json:"agent_status"`
}

// herdrAnswer is herdr's answer to agent.get or pane.get: the pane, its
// agent's status and the agent herdr names there. An error answers
// nothing.
func herdrAnswer(line []byte) (paneInfo, bool) {
	var resp struct {
		Result struct {
			Agent, Pane *paneInfo
		} `json:"result"`
	}
	if json.Unmarshal(line, &resp) != nil {
		return paneInfo{}, false
	}
	info := resp.Result.Agent
	if info == nil {
		info = resp.Result.Pane
	}
	if info == nil || info.PaneID == "" {
		return paneInfo{}, false
	}
	return *info, true
}
