package budget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// WarnViews is what the Warner reads of the projection.
type WarnViews interface {
	Views
	Subscribe() (<-chan projections.Change, func())
	WaitSeq(ctx context.Context, seq uint64) error
}

// Warner appends a budget_warning when an agent or a role crosses 80%
// and again at 100% of a limit: at most once per threshold and limit
// within the limit's window, fleet-wide.
type Warner struct {
	Log     events.Log
	Views   WarnViews
	Checker *Checker
	// Host is this gateway's: it writes the warnings of its own agents
	// (and of any role).
	Host   string
	Logger *slog.Logger
	// Interval is how often budgets are looked at without a change of the
	// roster (a fallback; replies wake it). Default 10s.
	Interval time.Duration
}

// Run watches until ctx ends. A failed append is logged and tried again
// at the next look.
func (w *Warner) Run(ctx context.Context) error {
	interval := w.Interval
	if interval == 0 {
		interval = 10 * time.Second
	}
	changes, cancel := w.Views.Subscribe()
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := w.Check(ctx); err != nil && ctx.Err() == nil {
			w.logger().Warn("budget: writing a warning failed; trying again", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case _, ok := <-changes:
			if !ok {
				return nil
			}
		drain:
			for {
				select {
				case <-changes:
				default:
					break drain
				}
			}
		}
	}
}

func (w *Warner) logger() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

// Check looks at every budget once and appends the warnings due.
func (w *Warner) Check(ctx context.Context) error {
	var errs []error
	c := w.Checker
	for _, name := range c.Roles.Names() {
		errs = append(errs, w.warn(ctx, c.RoleStandings(name), events.CategoryRole, name))
	}
	for _, a := range c.Views.Roster() {
		if a.Host != w.Host || a.Exited || c.Roles.Roles[a.Role].AgentBudget == nil {
			continue
		}
		errs = append(errs, w.warn(ctx, c.AgentStandings(*a), events.CategoryAgent, a.Agent))
	}
	return errors.Join(errs...)
}

// thresholds, highest first: one crossing writes the highest it reached.
var thresholds = []int{100, 80}

// due is the threshold of s not yet warned of within its window, or 0.
func due(s Standing, now time.Time) int {
	since := now.Add(-s.Limit.Window)
	for _, p := range thresholds {
		if s.Fraction()*100 < float64(p) {
			continue
		}
		for _, q := range thresholds {
			// A warning of this threshold or a higher one covers it.
			if q >= p && s.Usage.Warned[projections.WarningKey(s.Limit.Name, q)].After(since) {
				return 0
			}
		}
		return p
	}
	return 0
}

// warn appends the warnings due for one agent or role.
func (w *Warner) warn(ctx context.Context, ss []Standing, cat events.Category, id string) error {
	now := w.Checker.now()
	var errs []error
	for _, s := range ss {
		if due(s, now) == 0 {
			continue
		}
		errs = append(errs, w.append(ctx, s, cat, id, now))
	}
	return errors.Join(errs...)
}

// append writes the warning due for s unless another host did first: it
// reads the subject's last sequence, lets the views fold up to it and
// looks again, then appends expecting that sequence.
func (w *Warner) append(ctx context.Context, s Standing, cat events.Category, id string, now time.Time) error {
	subject, err := events.Subject(cat, id, "budget_warning")
	if err != nil {
		return err
	}
	last, err := w.Log.LastSeq(ctx, subject)
	if err != nil {
		return err
	}
	if err := w.Views.WaitSeq(ctx, last); err != nil {
		return err
	}
	kind := projections.KindAgent
	if cat == events.CategoryRole {
		kind = projections.KindRole
	}
	s.Usage = w.Checker.Views.Usage(kind, id)
	s.Used = s.Usage.In(s.Limit.Window, now).Of(s.Limit.USD)
	percent := due(s, now)
	if percent == 0 {
		return nil
	}
	below := WarnAt * s.Limit.Max
	if percent == 100 {
		below = s.Limit.Max
	}
	bw := events.BudgetWarning{Limit: s.Limit.Name, Scope: s.Scope, Percent: percent, Used: s.Used, Max: s.Limit.Max,
		FreesAt: s.Usage.FreesAt(s.Limit.Window, now, below, s.Limit.USD)}
	var data events.Data = events.AgentBudgetWarning{BudgetWarning: bw}
	if cat == events.CategoryRole {
		data = events.RoleBudgetWarning{BudgetWarning: bw}
	}
	ev := events.Event{ID: warningID(subject, s.Limit.Name, percent, last, now), Subject: id, Data: data}
	_, err = w.Log.Append(ctx, ev, events.ExpectLastSeq(last))
	if errors.Is(err, events.ErrConcurrency) {
		// Another host wrote on the subject since: the next look folds it.
		return nil
	}
	if err != nil {
		return fmt.Errorf("budget warning %s %s: %w", subject, s.Limit.Name, err)
	}
	w.logger().Info("budget warning", "subject", subject, "limit", s.Limit.Name, "percent", percent, "used", s.Used, "max", s.Limit.Max)
	return nil
}

// warningID is the warning's event id: its entropy is derived from what
// it warns of and the subject's sequence it follows, so every host (and
// every retry) that writes the same warning writes the same id.
func warningID(subject, limit string, percent int, after uint64, now time.Time) string {
	// The time part is the minute: hosts a few seconds apart agree.
	return events.DerivedID(uint64(now.Truncate(time.Minute).UnixMilli()),
		"fleetd/budget/"+subject+"/"+limit+"/"+strconv.Itoa(percent)+"/"+strconv.FormatUint(after, 10))
}
