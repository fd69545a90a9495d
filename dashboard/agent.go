package dashboard

import (
	"context"
	"fmt"
	"slices"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

// agentModel is the agent view: one agent's row, its session, what
// happened to its pane and session (registrations, session starts and
// ends, exits) and its conversation: its turns, oldest first.
type agentModel struct {
	Agent   projections.Agent
	State   string
	Session *projections.Session
	// Lifecycle are the agent's registered, session, restart and exited
	// events (a restart's cause names who asked for one),
	// oldest first (the latest TurnRows); Restarts counts registrations
	// after the first.
	Lifecycle []events.Event
	Restarts  int
	// Turns is the conversation, oldest first: the newest TurnRows of
	// Total.
	Turns []lifecycle.Turn
	Total int
}

func (s *Server) agentModel(ctx context.Context, src source, id string) (agentModel, bool, error) {
	a, ok := src.views.Agent(id)
	if !ok {
		return agentModel{}, false, nil
	}
	m := agentModel{Agent: a, State: AgentState(a)}
	for _, sess := range src.views.Sessions() {
		if sess.Name == a.Session {
			m.Session = &sess
			break
		}
	}
	var subjects []string
	for _, kind := range []string{"registered", "session", "restart", "exited"} {
		subj, err := events.AgentSubject(id, kind)
		if err != nil {
			return agentModel{}, false, err
		}
		subjects = append(subjects, subj)
	}
	registrations := 0
	to, _ := src.readTo() // the agent is there, so the log is not empty
	for ev, err := range s.cfg.Log.Read(ctx, events.Query{Subjects: subjects, ToSeq: to}) {
		if err != nil {
			return agentModel{}, false, fmt.Errorf("read %s's lifecycle: %w", id, err)
		}
		if _, ok := ev.Data.(events.AgentRegistered); ok {
			registrations++
		}
		m.Lifecycle = append(m.Lifecycle, ev)
		if len(m.Lifecycle) > 2*s.cfg.TurnRows {
			m.Lifecycle = slices.Delete(m.Lifecycle, 0, s.cfg.TurnRows)
		}
	}
	if n := len(m.Lifecycle); n > s.cfg.TurnRows {
		m.Lifecycle = m.Lifecycle[n-s.cfg.TurnRows:]
	}
	m.Restarts = max(0, registrations-1)
	turns := src.views.Turns(func(t lifecycle.Turn) bool { return t.Agent == id })
	m.Total = len(turns)
	turns = turns[:min(len(turns), s.cfg.TurnRows)]
	slices.Reverse(turns)
	m.Turns = turns
	return m, true, nil
}
