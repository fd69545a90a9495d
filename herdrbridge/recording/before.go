package recording

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
)

// What an OpBefore step says (its Event): the statuses the bridge weighs
// before typing (herdrbridge.Statuses), as it had been told them when the
// recording began.
const (
	// BeforeHerdr: herdr's last status of the agent's pane (State, ""
	// when herdr said none since the agent was registered in it) and the
	// agent herdr names there (Text, "" for none): Statuses.Herdr and
	// Labelled.
	BeforeHerdr = "herdr"
	// BeforeHook: the hooks' last status (State, "" for none yet):
	// Statuses.Hook.
	BeforeHook = "hook"
	// BeforeSession: whether the hooks reported the agent's session since
	// it was registered (State "started", else "none"): Statuses.Hooked.
	BeforeSession = "session"
	// BeforePrompt: whether herdr refuses agent.prompt for the agent
	// (State "refused": it refused it, or the agent runs in a sandbox;
	// else "accepted"): Statuses.Refused.
	BeforePrompt = "prompt"
)

// Before folds what the bridge had been told of an agent before a
// scenario began into the OpBefore steps that say it at time 0: the
// agent's log events then (its registration, the session and statuses its
// hooks reported, herdr's refusals of agent.prompt) and herdr's words
// about its pane on the wire (status events, agent detections, answers to
// agent.get and pane.get), folded in time order as the bridge folds them
// (Bridge.apply, Bridge.observe, Bridge.onLifecycle). A recording begins
// where the last scenario left the agent, and what herdr and the hooks
// said before it is what lets the replay weigh its statuses
// (Statuses.Hold) instead of taking each both ways.
func Before(wire []Wire, logs []LogEvent, s *Scrubber) []Step {
	type said struct {
		at time.Time
		// A log event, or herdr's word about a pane (herdr: an answer
		// to agent.get or pane.get, a status event or an agent
		// detection): the pane, the status it gives, the agent it
		// names.
		log                        *LogEvent
		herdr, pane, status, agent string
	}
	var all []said
	for i := range logs {
		all = append(all, said{at: logs[i].Time, log: &logs[i]})
	}
	reqs := map[int]request{}
	for _, w := range wire {
		if w.Note != "" {
			continue
		}
		if w.Request {
			var q request
			if json.Unmarshal(w.Line, &q) == nil {
				reqs[w.Conn] = q
			}
			continue
		}
		q, ok := reqs[w.Conn]
		if !ok {
			continue
		}
		switch q.Method {
		case "agent.get", "pane.get":
			if info, ok := herdrAnswer(w.Line); ok {
				all = append(all, said{at: w.At, herdr: "answer", pane: info.PaneID, status: info.AgentStatus, agent: info.Agent})
			}
		case "events.subscribe":
			var ev struct {
				Event string `json:"event"`
				Data  struct {
					PaneID      string `json:"pane_id"`
					Agent       string `json:"agent"`
					AgentStatus string `json:"agent_status"`
				} `json:"data"`
			}
			if json.Unmarshal(w.Line, &ev) != nil {
				continue
			}
			switch e := strings.ReplaceAll(ev.Event, ".", "_"); e {
			case "pane_agent_detected", "pane_agent_status_changed":
				all = append(all, said{at: w.At, herdr: e, pane: ev.Data.PaneID, status: ev.Data.AgentStatus, agent: ev.Data.Agent})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b said) int { return a.at.Compare(b.at) })

	var (
		pane, herdr, label, hook string
		hooked, refused          bool
	)
	for _, x := range all {
		if x.log == nil {
			// herdr's word counts for the pane the agent is registered
			// in, the only one the bridge asks about.
			if pane == "" || x.pane != pane {
				continue
			}
			switch x.herdr {
			case "answer":
				herdr, label = x.status, x.agent
			case "pane_agent_status_changed":
				herdr = x.status
				if x.agent != "" {
					label = x.agent
				}
			case "pane_agent_detected":
				// The bridge asks herdr about the pane then (an answer
				// on the wire); an agent named again is the pane's
				// foreground process again: agent.prompt is accepted.
				label = x.agent
				if x.agent != "" {
					refused = false
				}
			}
			continue
		}
		var data map[string]any
		if len(x.log.Data) > 0 && json.Unmarshal(x.log.Data, &data) != nil {
			continue
		}
		str := func(k string) string { v, _ := data[k].(string); return v }
		switch x.log.Type {
		case "registered":
			if p := str("pane"); p != pane {
				pane, herdr, label = p, "", ""
			}
			hooked, refused = false, str("sandbox") != ""
		case "session":
			if str("state") == "started" {
				hooked = true
			}
		case "status":
			status := events.Status(str("status"))
			switch str("source") {
			case "hook":
				hook = string(status)
			case herdrbridge.StatusSourceScreen:
				if status == events.StatusIdle && (hook == string(events.StatusBlocked) || hook == string(events.StatusWorking)) {
					hook = string(status)
				}
			}
		case "deferred":
			if r := str("reason"); r == "agent_not_ready" || r == "agent_not_found" {
				refused = true
			}
		}
	}
	session, prompt := "none", "accepted"
	if hooked {
		session = "started"
	}
	if refused {
		prompt = "refused"
	}
	return []Step{
		{Op: OpBefore, Pane: s.Pane(pane), Event: BeforeHerdr, State: herdr, Text: label},
		{Op: OpBefore, Pane: s.Pane(pane), Event: BeforeHook, State: hook},
		{Op: OpBefore, Pane: s.Pane(pane), Event: BeforeSession, State: session},
		{Op: OpBefore, Pane: s.Pane(pane), Event: BeforePrompt, State: prompt},
	}
}
