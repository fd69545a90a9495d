package budget

import (
	"cmp"
	"slices"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
)

// Thresholds: a warning at WarnAt of a limit, exhausted at all of it.
const WarnAt = 0.8

// Scopes of a budget.
const (
	ScopeRole  = "role"
	ScopeAgent = "agent"
)

// Views is what the Checker reads of the projection.
type Views interface {
	Usage(kind, id string) projections.Usage
	Roster() []*projections.Agent
}

// Checker judges agents and roles against their budgets at its clock.
// It holds no state of its own: every call reads the views.
type Checker struct {
	Roles roles.Config
	Views Views
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c *Checker) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// Standing is one limit of one agent's or role's budget as it stands.
type Standing struct {
	Scope string
	Of    string
	Limit roles.Limit
	Used  float64
	// Usage is what Used was read from, for FreesAt.
	Usage projections.Usage
}

// Fraction is Used over the limit.
func (s Standing) Fraction() float64 { return s.Used / s.Limit.Max }

// standings reads every limit of b for the aggregate kind/id at now.
func (c *Checker) standings(b *roles.Budget, scope, kind, id string, now time.Time) []Standing {
	limits := b.Limits()
	if len(limits) == 0 {
		return nil
	}
	u := c.Views.Usage(kind, id)
	out := make([]Standing, len(limits))
	for i, l := range limits {
		out[i] = Standing{Scope: scope, Of: id, Limit: l, Used: u.In(l.Window, now).Of(l.USD), Usage: u}
	}
	return out
}

// RoleStandings is every limit of role's shared budget.
func (c *Checker) RoleStandings(role string) []Standing {
	return c.standings(c.Roles.Roles[role].Budget, ScopeRole, projections.KindRole, role, c.now())
}

// AgentStandings is every limit of the agent's own budget (its role's
// agent_budget).
func (c *Checker) AgentStandings(a projections.Agent) []Standing {
	return c.standings(c.Roles.Roles[a.Role].AgentBudget, ScopeAgent, projections.KindAgent, a.Agent, c.now())
}

// state is the worst of standings as a BudgetState, or nil when all are
// under WarnAt: the exhausted limit that frees last, else the warning
// nearest to its bound.
func state(ss []Standing, now time.Time) *projections.BudgetState {
	var worst *projections.BudgetState
	for _, s := range ss {
		f := s.Fraction()
		if f < WarnAt {
			continue
		}
		st := &projections.BudgetState{State: projections.BudgetWarning, Scope: s.Scope, Of: s.Of, Limit: s.Limit.Name, Used: s.Used, Max: s.Limit.Max}
		below := WarnAt * s.Limit.Max
		if f >= 1 {
			st.State, below = projections.BudgetExhausted, s.Limit.Max
		}
		st.FreesAt = s.Usage.FreesAt(s.Limit.Window, now, below, s.Limit.USD)
		if worse(st, worst) {
			worst = st
		}
	}
	return worst
}

// worse reports whether a stands worse than b: exhausted beats warning,
// then the later FreesAt for exhausted (the turn waits for the last one)
// and the fuller limit for warnings.
func worse(a, b *projections.BudgetState) bool {
	if b == nil {
		return true
	}
	if a.Exhausted() != b.Exhausted() {
		return a.Exhausted()
	}
	if a.Exhausted() {
		return a.FreesAt.After(b.FreesAt)
	}
	return a.Used/a.Max > b.Used/b.Max
}

// Agent is how the agent stands: against its own budget and its role's,
// the worse of the two; nil when under 80% of every limit. A new turn for
// it is refused while it is exhausted.
func (c *Checker) Agent(a projections.Agent) *projections.BudgetState {
	now := c.now()
	return state(append(c.AgentStandings(a), c.RoleStandings(a.Role)...), now)
}

// Role is how a role stands for a turn sent to the role: its shared
// budget, or, when every live agent of the role is out of its own
// budget, the one that frees first. Nil when under 80% of every limit.
func (c *Checker) Role(role string) *projections.BudgetState {
	now := c.now()
	own := state(c.RoleStandings(role), now)
	if own.Exhausted() || c.Roles.Roles[role].AgentBudget == nil {
		return own
	}
	var first *projections.BudgetState
	live := 0
	for _, a := range projections.OfRole(c.Views.Roster(), role) {
		if a.Exited {
			continue
		}
		live++
		st := state(c.AgentStandings(*a), now)
		if !st.Exhausted() {
			return own
		}
		if first == nil || st.FreesAt.Before(first.FreesAt) {
			first = st
		}
	}
	if live == 0 {
		return own
	}
	return first
}

// Decorate returns a copy of the rows with each one's Budget filled.
func (c *Checker) Decorate(roster []*projections.Agent) []*projections.Agent {
	// The views share their roster's rows with every caller: a row that
	// gains a budget is a copy.
	out := slices.Clone(roster)
	for i, a := range out {
		if st := c.Agent(*a); st != nil {
			row := *a
			row.Budget = st
			out[i] = &row
		}
	}
	return out
}

// Exhausted lists every agent and role out of budget now, roles first,
// for health: the roles with a budget and the agents of the roster.
func (c *Checker) Exhausted() []*projections.BudgetState {
	var out []*projections.BudgetState
	now := c.now()
	for _, name := range c.Roles.Names() {
		if st := state(c.RoleStandings(name), now); st.Exhausted() {
			out = append(out, st)
		}
	}
	for _, a := range c.Views.Roster() {
		if a.Exited {
			continue
		}
		if st := state(c.AgentStandings(*a), now); st.Exhausted() {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(x, y *projections.BudgetState) int { return cmp.Compare(x.Scope, y.Scope) * -1 })
	return out
}

// Admit is turns.Queuer's Budget: nil when a new turn for to may be
// queued now, else a *turns.BudgetError with the limit and when it frees.
// An agent is judged by Agent (its own budget and its role's); a role by
// Role, unless the role has budget_queue — its turns are taken and wait at
// the head of its queue, where the router holds them until the budget
// frees. An agent the roster does not know is not the budget's to refuse.
func (c *Checker) Admit(to turns.Target) error {
	var st *projections.BudgetState
	switch to.Kind {
	case turns.KindAgent:
		a, ok := lo.Find(c.Views.Roster(), func(a *projections.Agent) bool { return a.Agent == to.Name })
		if !ok {
			return nil
		}
		st = c.Agent(*a)
	case turns.KindRole:
		if c.Roles.Roles[to.Name].BudgetQueue {
			return nil
		}
		st = c.Role(to.Name)
	}
	if !st.Exhausted() {
		return nil
	}
	limit := *st
	limit.FreesAt = time.Time{} // said once, by the error, as frees_at
	return &turns.BudgetError{Target: to, Limit: limit.String(), FreesAt: st.FreesAt}
}
