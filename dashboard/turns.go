package dashboard

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// turnFilter selects turns in the turns view.
type turnFilter struct {
	Agent, Role, Job, State string
}

// turnStates are the turns view's state choices: the lifecycle's, and
// "open" for any not final.
var turnStates = []string{"open", string(lifecycle.StateQueued), string(lifecycle.StateTyped), string(lifecycle.StateSubmitted),
	string(lifecycle.StateReplied), string(lifecycle.StateFailed)}

func (f turnFilter) match(t lifecycle.Turn) bool {
	switch {
	case f.Agent != "" && t.Agent != f.Agent,
		f.Role != "" && t.Role != f.Role,
		f.Job != "" && t.Job != f.Job,
		f.State == "open" && t.State.Final(),
		f.State != "" && f.State != "open" && string(t.State) != f.State:
		return false
	}
	return true
}

// turnsModel is the turns view: the newest turns that match, at most
// TurnRows of Total.
type turnsModel struct {
	Filter turnFilter
	Turns  []lifecycle.Turn
	Total  int
	States []string
	Roles  []string
}

func (s *Server) turnsModel(src source, f turnFilter) turnsModel {
	all := src.views.Turns(func(t lifecycle.Turn) bool {
		if t.Role == "" && t.Agent != "" {
			// A direct turn's role is its agent's: filter by that too.
			if a, ok := src.views.Agent(t.Agent); ok {
				t.Role = a.Role
			}
		}
		return f.match(t)
	})
	m := turnsModel{Filter: f, Total: len(all), States: turnStates}
	m.Turns = all[:min(len(all), s.cfg.TurnRows)]
	seen := map[string]bool{}
	for _, a := range src.views.Roster() {
		if a.Role != "" && !seen[a.Role] {
			seen[a.Role] = true
			m.Roles = append(m.Roles, a.Role)
		}
	}
	return m
}

// Timeline is a turn and the steps it went through, in the order the log
// recorded them, with the time between each and the one before: what
// the dashboard's turn view and `fleetd turn` show.
type Timeline struct {
	Turn  lifecycle.Turn `json:"turn"`
	Steps []Step         `json:"steps"`
	// TotalMS is queued to final (to the view's time while open).
	TotalMS float64 `json:"total_ms"`
	// FromLog: the steps are the turn's events; false when the log no
	// longer holds them (trimmed) and they come from the turn's times.
	FromLog bool `json:"from_log"`
	// At is the point the timeline is as of ("" live).
	At string `json:"at,omitempty"`
}

// Step is one step of a turn: queued, assigned, typed, enter (an extra
// Enter), deferred (herdr typed nothing), submitted, replied or failed.
type Step struct {
	Step string    `json:"step"`
	At   time.Time `json:"at"`
	// SincePrevMS is the time since the step before (0 for the first).
	SincePrevMS float64 `json:"since_prev_ms"`
	Detail      string  `json:"detail,omitempty"`
	// Seq is the step's event's stream sequence (0 from the turn's times).
	Seq   uint64       `json:"seq,omitempty"`
	Event events.Event `json:"-"`
}

// The steps of a turn.
const (
	StepQueued    = "queued"
	StepAssigned  = "assigned"
	StepTyped     = "typed"
	StepEnter     = "enter"
	StepDeferred  = "deferred"
	StepReleased  = "released"
	StepSubmitted = "submitted"
	StepReplied   = "replied"
	StepFailed    = "failed"
)

// timeline finds turn id in src and its steps in the log.
func (s *Server) timeline(ctx context.Context, src source, id string) (Timeline, bool, error) {
	t, ok, err := src.views.Turn(ctx, id)
	if err != nil || !ok {
		return Timeline{}, false, err
	}
	tl := Timeline{Turn: t, At: src.point.String()}
	evs, err := s.turnEvents(ctx, src, t)
	if err != nil {
		return Timeline{}, false, err
	}
	if len(evs) > 0 {
		tl.FromLog = true
		submitted := false
		for _, ev := range evs {
			st, ok := stepOf(ev, len(tl.Steps) == 0)
			if !ok {
				continue
			}
			switch st.Step {
			case StepTyped:
				submitted = false
			case StepSubmitted:
				submitted = true
			case StepReplied:
				if !submitted {
					// The reply proves the prompt was submitted, as the
					// turn's own state says: the UserPromptSubmit hook's
					// event came later or still sits in its spool (hooks
					// racing on a loaded machine).
					tl.Steps = append(tl.Steps, Step{Step: StepSubmitted, At: st.At,
						Detail: "implied by the reply: the UserPromptSubmit hook's own event is not in the log before it"})
				}
			}
			tl.Steps = append(tl.Steps, st)
		}
	} else {
		tl.Steps = stepsFromTimes(t)
	}
	for i := 1; i < len(tl.Steps); i++ {
		tl.Steps[i].SincePrevMS = ms(tl.Steps[i].At.Sub(tl.Steps[i-1].At))
	}
	end := t.EndedAt()
	if end.IsZero() {
		end = src.now
	}
	if !t.QueuedAt.IsZero() {
		tl.TotalMS = ms(end.Sub(t.QueuedAt))
	}
	return tl, true, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// turnEvents reads the turn's events: its agent's (and its role queue's)
// between its first and last sequence, those of this turn.
func (s *Server) turnEvents(ctx context.Context, src source, t lifecycle.Turn) ([]events.Event, error) {
	var subjects []string
	if t.Agent != "" {
		subj, err := events.AgentAll(t.Agent)
		if err != nil {
			return nil, err
		}
		subjects = append(subjects, subj)
	}
	if t.ReleasedFrom != "" && t.ReleasedFrom != t.Agent {
		// The agent it was released from holds its first assignment.
		if subj, err := events.AgentAll(t.ReleasedFrom); err == nil {
			subjects = append(subjects, subj)
		}
	}
	if t.Role != "" {
		for _, kind := range []string{"queued", "cancelled"} {
			if subj, err := events.RoleSubject(t.Role, kind); err == nil {
				subjects = append(subjects, subj)
			}
		}
	}
	if len(subjects) == 0 || t.LastSeq == 0 {
		return nil, nil
	}
	to := t.LastSeq
	if end, _ := src.readTo(); end > 0 {
		to = min(to, end)
	}
	var out []events.Event
	for ev, err := range s.cfg.Log.Read(ctx, events.Query{Subjects: subjects, FromSeq: max(t.FirstSeq, 1), ToSeq: to}) {
		if err != nil {
			return nil, fmt.Errorf("read turn %s: %w", t.ID, err)
		}
		if lifecycle.TurnID(ev) == t.ID {
			out = append(out, ev)
		}
	}
	return out, nil
}

// stepOf names the step an event of a turn is.
func stepOf(ev events.Event, first bool) (Step, bool) {
	st := Step{At: ev.Time, Seq: ev.Seq, Event: ev}
	switch d := ev.Data.(type) {
	case events.RoleQueued:
		st.Step, st.Detail = StepQueued, fmt.Sprintf("from %s to role:%s", orDash(d.From), ev.Subject)
		if d.Requeue > 0 {
			st.Detail = fmt.Sprintf("back in role:%s's queue (release %d)", ev.Subject, d.Requeue)
		}
	case events.RoleCancelled:
		st.Step, st.Detail = StepFailed, fmt.Sprintf("%s: cancelled by %s in role:%s's queue", events.ReasonCancelled, d.By, ev.Subject)
	case events.AgentReleased:
		st.Step, st.Detail = StepReleased, fmt.Sprintf("from %s back to role:%s: %s: %s", ev.Subject, d.Role, d.Reason, d.Message)
	case events.AgentQueued:
		st.Step, st.Detail = StepQueued, fmt.Sprintf("from %s to %s", orDash(d.From), ev.Subject)
		if !first || d.AssignedFrom != "" {
			st.Step, st.Detail = StepAssigned, fmt.Sprintf("to %s from role:%s", ev.Subject, d.AssignedFrom)
		}
	case events.AgentTyped:
		if d.Enter > 0 {
			st.Step, st.Detail = StepEnter, fmt.Sprintf("Enter pressed again (%d): no submission seen in time", d.Enter)
			break
		}
		parts := []string{"into " + d.Pane, "via " + d.Method}
		if d.Delivery != "" {
			parts = append(parts, "as "+d.Delivery)
		}
		if d.Clear {
			parts = append(parts, "after /clear")
		}
		parts = append(parts, fmt.Sprintf("%d bytes", d.Bytes))
		st.Step, st.Detail = StepTyped, strings.Join(parts, ", ")
	case events.AgentDeferred:
		st.Step, st.Detail = StepDeferred, strings.TrimSuffix(d.Reason+": "+d.Message, ": ")
	case events.AgentSubmitted:
		st.Step, st.Detail = StepSubmitted, "via "+d.Via
		if d.PromptID != "" {
			st.Detail += ", prompt " + d.PromptID
		}
	case events.AgentReplied:
		st.Step, st.Detail = StepReplied, fmt.Sprintf("tokens %d in / %d out, %s", d.Tokens.In, d.Tokens.Out, usd(d.CostUSD))
		if d.UsagePending {
			st.Detail = "usage read after the reply"
		}
	case events.AgentFailed:
		st.Step, st.Detail = StepFailed, strings.TrimSuffix(d.Reason+": "+d.Message, ": ")
	default:
		return Step{}, false
	}
	return st, true
}

// stepsFromTimes is a timeline from the turn's own times, for a turn
// whose events the log no longer holds.
func stepsFromTimes(t lifecycle.Turn) []Step {
	var out []Step
	add := func(step string, at time.Time, detail string) {
		if !at.IsZero() {
			out = append(out, Step{Step: step, At: at, Detail: detail})
		}
	}
	add(StepQueued, t.QueuedAt, "from "+orDash(t.From))
	add(StepAssigned, t.AssignedAt, "to "+t.Agent)
	add(StepTyped, t.TypedAt, "via "+t.Method)
	add(StepSubmitted, t.SubmittedAt, "via "+t.SubmittedVia)
	add(StepReplied, t.RepliedAt, fmt.Sprintf("tokens %d in / %d out, %s", t.Tokens.In, t.Tokens.Out, usd(t.CostUSD)))
	add(StepFailed, t.FailedAt, strings.TrimSuffix(t.Reason+": "+t.Message, ": "))
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// usd renders a cost in dollars, to the micro-dollar below a cent.
func usd(v float64) string {
	if v != 0 && v < 0.01 {
		return fmt.Sprintf("$%.6f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
