package roles

import (
	"errors"
	"fmt"
	"time"
)

// Budget bounds model usage in rolling windows, as the Claude Code hooks
// record it on replies: tokens and USD per hour and per day. A zero field
// is no bound. Tokens are input, output and cache creation tokens; cache
// reads are not counted (they re-read context already paid for, and
// dominate every long conversation).
//
// A role's "budget" is shared by all its agents, fleet-wide; its
// "agent_budget" applies to each of its agents on its own.
type Budget struct {
	USDPerHour    float64 `json:"usd_per_hour,omitempty"`
	USDPerDay     float64 `json:"usd_per_day,omitempty"`
	TokensPerHour int64   `json:"tokens_per_hour,omitempty"`
	TokensPerDay  int64   `json:"tokens_per_day,omitempty"`
}

// Limit is one bound of a Budget: at most Max tokens (or USD) in any
// Window.
type Limit struct {
	// Name is the roles file's key: "usd_per_day", "tokens_per_hour", …
	Name   string
	Window time.Duration
	Max    float64
	// USD: Max is dollars; otherwise tokens.
	USD bool
}

// The rolling windows a Budget's limits are over.
const (
	hour = time.Hour
	day  = 24 * time.Hour
)

// Limits lists the budget's bounds that are set, hour before day, USD
// before tokens. A nil budget has none.
func (b *Budget) Limits() []Limit {
	if b == nil {
		return nil
	}
	var out []Limit
	for _, l := range []Limit{
		{Name: "usd_per_hour", Window: hour, Max: b.USDPerHour, USD: true},
		{Name: "tokens_per_hour", Window: hour, Max: float64(b.TokensPerHour)},
		{Name: "usd_per_day", Window: day, Max: b.USDPerDay, USD: true},
		{Name: "tokens_per_day", Window: day, Max: float64(b.TokensPerDay)},
	} {
		if l.Max > 0 {
			out = append(out, l)
		}
	}
	return out
}

// validate reports a budget's problems.
func (b *Budget) validate() error {
	if b == nil {
		return nil
	}
	var errs []error
	if b.USDPerHour < 0 || b.USDPerDay < 0 || b.TokensPerHour < 0 || b.TokensPerDay < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if len(b.Limits()) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("sets no limit (usd_per_hour, usd_per_day, tokens_per_hour, tokens_per_day)"))
	}
	return errors.Join(errs...)
}

// validateBudgets reports the role's budget problems, named.
func (r Role) validateBudgets() []error {
	var errs []error
	if err := r.Budget.validate(); err != nil {
		errs = append(errs, fmt.Errorf("role %q: budget %w", r.Name, err))
	}
	if err := r.AgentBudget.validate(); err != nil {
		errs = append(errs, fmt.Errorf("role %q: agent_budget %w", r.Name, err))
	}
	if r.BudgetQueue && r.Budget == nil {
		errs = append(errs, fmt.Errorf("role %q: budget_queue needs a budget", r.Name))
	}
	return errs
}
