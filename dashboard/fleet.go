package dashboard

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// The states the fleet view shows an agent in, most urgent first: a
// roster row's flags and status, folded into the one word a person scans
// for.
const (
	StateAttention = "attention"
	StateStale     = "stale"
	StateExited    = "exited"
	StateEnded     = "ended"
	StateBlocked   = "blocked"
	StateWorking   = "working"
	StateIdle      = "idle"
	StateUnknown   = "unknown"
)

// AgentState is the one state the fleet view shows for a roster row.
func AgentState(a projections.Agent) string {
	switch {
	case a.Exited:
		return StateExited
	case a.NeedsAttention != "" || a.Violation != "":
		return StateAttention
	case a.Stale:
		return StateStale
	case a.SessionEnded:
		return StateEnded
	case a.Status == events.StatusBlocked:
		return StateBlocked
	case a.Status == events.StatusWorking || a.CurrentTurn != "":
		return StateWorking
	case a.Status.Ready():
		return StateIdle
	}
	return StateUnknown
}

// stateLabel is how a state reads on the page.
func stateLabel(s string) string {
	switch s {
	case StateAttention:
		return "needs attention"
	case StateEnded:
		return "session ended"
	}
	return s
}

// fleetModel is the fleet view: agents grouped by host, then role.
type fleetModel struct {
	Hosts  []hostGroup
	Agents int
	// Counts per state, for the summary line.
	Counts  map[string]int
	States  []string
	Tokens  events.Tokens
	CostUSD float64
}

type hostGroup struct {
	projections.Host
	// Known: the host announced itself (up or heartbeat events); agents
	// of a host that never did are shown under its name all the same.
	Known  bool
	Roles  []roleGroup
	Agents int
}

type roleGroup struct {
	Role   string
	Agents []agentRow
}

type agentRow struct {
	projections.Agent
	State string
	// Turn is the agent's current turn, when it has one; Since is when it
	// was typed (or queued).
	Turn  *lifecycle.Turn
	Since time.Time
	// ModelShown is the model it registered with, else the one its
	// session's replies named.
	ModelShown string
}

func (s *Server) fleetModel(ctx context.Context, src source) fleetModel {
	m := fleetModel{Counts: map[string]int{}}
	hosts := map[string]*hostGroup{}
	for _, h := range src.views.Hosts() {
		hosts[h.Host] = &hostGroup{Host: h, Known: !h.Unheard}
	}
	models := map[string]string{}
	for _, sess := range src.views.Sessions() {
		models[sess.Name] = sess.Model
	}
	roles := map[[2]string]*roleGroup{}
	for _, row := range src.views.Roster() {
		a := *row // the views' rows are shared: this one gains a budget
		if src.seq == 0 && s.cfg.Budgets != nil {
			a.Budget = s.cfg.Budgets.Agent(a)
		}
		row := agentRow{Agent: a, State: AgentState(a), ModelShown: a.Model}
		if row.ModelShown == "" {
			row.ModelShown = models[a.Session]
		}
		if a.CurrentTurn != "" {
			if t, ok, err := src.views.Turn(ctx, a.CurrentTurn); err == nil && ok {
				row.Turn, row.Since = &t, t.QueuedAt
				if !t.TypedAt.IsZero() {
					row.Since = t.TypedAt
				}
			}
		}
		h, ok := hosts[a.Host]
		if !ok {
			h = &hostGroup{Host: projections.Host{Host: a.Host}}
			hosts[a.Host] = h
		}
		k := [2]string{a.Host, a.Role}
		rg, ok := roles[k]
		if !ok {
			rg = &roleGroup{Role: a.Role}
			roles[k] = rg
		}
		rg.Agents = append(rg.Agents, row) // the roster is sorted by id
		h.Agents++
		m.Agents++
		m.Counts[row.State]++
		m.Tokens = m.Tokens.Add(a.Tokens)
		m.CostUSD += a.CostUSD
	}
	for k, rg := range roles {
		hosts[k[0]].Roles = append(hosts[k[0]].Roles, *rg)
	}
	for _, h := range hosts {
		slices.SortFunc(h.Roles, func(x, y roleGroup) int { return cmp.Compare(x.Role, y.Role) })
		m.Hosts = append(m.Hosts, *h)
	}
	slices.SortFunc(m.Hosts, func(x, y hostGroup) int { return cmp.Compare(x.Host.Host, y.Host.Host) })
	for _, st := range []string{StateWorking, StateIdle, StateBlocked, StateAttention, StateStale, StateEnded, StateExited, StateUnknown} {
		if m.Counts[st] > 0 {
			m.States = append(m.States, st)
		}
	}
	return m
}
