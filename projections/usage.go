package projections

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/fleetd/fleetd/events"
)

// Usage is kept in time buckets, so a rolling window's sum is a sum of a
// few buckets and the memory an agent or role takes is bounded whatever
// its traffic: fine buckets cover the last hour (at most 13 of them),
// coarse buckets the last day (at most 25). A window counts every bucket
// that overlaps it, so usage leaves an hour's window by the 5 minutes and
// a day's by the hour: a budget frees up to one step late, never early.
const (
	FineStep   = 5 * time.Minute
	fineSpan   = time.Hour
	CoarseStep = time.Hour
	coarseSpan = 24 * time.Hour
)

// UsageBucket is the usage recorded in the step starting at At (Unix
// seconds).
type UsageBucket struct {
	At     int64   `json:"t"`
	Tokens int64   `json:"k,omitempty"`
	USD    float64 `json:"u,omitempty"`
}

// Spend is an amount of usage: tokens (input, output and cache creation;
// not cache reads) and USD.
type Spend struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
}

// Of is the amount in a limit's unit: USD or tokens.
func (s Spend) Of(usd bool) float64 {
	if usd {
		return s.USD
	}
	return float64(s.Tokens)
}

// BudgetTokens is how many of a reply's tokens count against a budget:
// input, output and cache creation. Cache reads re-read context already
// paid for and would make every budget a measure of context length.
func BudgetTokens(t events.Tokens) int64 { return t.In + t.Out + t.CacheCreation }

// Usage is an agent's or a role's model usage in rolling windows, folded
// from the replied events the hooks write (the role's is the sum of its
// agents'), and the budget warnings written for it. Every host folds the
// same log, so every host sees the same numbers; In and FreesAt judge
// them against the caller's clock.
type Usage struct {
	// Fine buckets (FineStep) cover the last hour, Coarse (CoarseStep) the
	// last day, both oldest first.
	Fine   []UsageBucket `json:"fine,omitempty"`
	Coarse []UsageBucket `json:"coarse,omitempty"`
	// Warned maps WarningKey(limit, percent) to the time of the latest
	// budget_warning event for it.
	Warned map[string]time.Time `json:"warned,omitempty"`
}

// WarningKey names one threshold of one limit in Usage.Warned.
func WarningKey(limit string, percent int) string { return limit + "@" + strconv.Itoa(percent) }

// series picks the buckets that serve a window: fine up to an hour,
// coarse beyond.
func (u Usage) series(window time.Duration) ([]UsageBucket, int64) {
	if window <= fineSpan {
		return u.Fine, int64(FineStep / time.Second)
	}
	return u.Coarse, int64(CoarseStep / time.Second)
}

// In is the usage in the window ending at now: every bucket that
// overlaps it. Windows up to an hour are served by the fine buckets,
// longer ones (up to a day) by the coarse ones.
func (u Usage) In(window time.Duration, now time.Time) Spend {
	buckets, step := u.series(window)
	from := now.Add(-window).Unix()
	var s Spend
	for _, b := range buckets {
		if b.At+step > from {
			s.Tokens += b.Tokens
			s.USD += b.USD
		}
	}
	return s
}

// FreesAt is the earliest time, not before now, at which the window's
// usage (in USD or tokens) is below below if nothing more is used: now
// when it already is.
func (u Usage) FreesAt(window time.Duration, now time.Time, below float64, usd bool) time.Time {
	total := u.In(window, now).Of(usd)
	if total < below {
		return now
	}
	buckets, step := u.series(window)
	from := now.Add(-window).Unix()
	for _, b := range buckets {
		if b.At+step <= from {
			continue
		}
		total -= Spend{Tokens: b.Tokens, USD: b.USD}.Of(usd)
		if total < below {
			return time.Unix(b.At+step, 0).Add(window).UTC()
		}
	}
	// Every bucket gone and still not below: only a non-positive bound.
	return now
}

// view copies u so a reader may keep it while the fold goes on.
func (u *usage) view() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{Fine: slices.Clone(u.Fine), Coarse: slices.Clone(u.Coarse)}
	if len(u.Warned) > 0 {
		out.Warned = make(map[string]time.Time, len(u.Warned))
		for k, v := range u.Warned {
			out.Warned[k] = v
		}
	}
	return out
}

// usage is the fold's state behind a Usage: the same fields, mutated in
// place by the fold loop only, and stored in checkpoints as they are.
type usage Usage

// add records spend at t in both series and drops the buckets that have
// left every window.
func (u *usage) add(t time.Time, s Spend) {
	u.Fine = addBucket(u.Fine, t, FineStep, fineSpan, s)
	u.Coarse = addBucket(u.Coarse, t, CoarseStep, coarseSpan, s)
}

// addBucket adds s to the bucket of step holding t, keeping the series
// sorted, and drops the buckets no window of span can reach any more: a
// bucket [At, At+step) is counted at now while At+step > now-span, and
// now is at least the newest bucket's start (the latest event), so one
// with At+step <= newest-span is never counted again. Which buckets are
// kept depends on the log only, not on the clock.
func addBucket(bs []UsageBucket, t time.Time, step, span time.Duration, s Spend) []UsageBucket {
	sec, spanSec := int64(step/time.Second), int64(span/time.Second)
	at := t.Unix() - mod(t.Unix(), sec)
	newest := at
	if n := len(bs); n > 0 && bs[n-1].At > newest {
		newest = bs[n-1].At
	}
	gone := func(b int64) bool { return b+sec <= newest-spanSec }
	if !gone(at) {
		i, found := slices.BinarySearchFunc(bs, at, func(b UsageBucket, at int64) int { return cmp.Compare(b.At, at) })
		if !found {
			bs = slices.Insert(bs, i, UsageBucket{At: at})
		}
		bs[i].Tokens += s.Tokens
		bs[i].USD += s.USD
	}
	n := 0
	for n < len(bs) && gone(bs[n].At) {
		n++
	}
	return slices.Delete(bs, 0, n)
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// warned records a budget warning's threshold.
func (u *usage) warned(limit string, percent int, t time.Time) {
	if u.Warned == nil {
		u.Warned = map[string]time.Time{}
	}
	k := WarningKey(limit, percent)
	if t.After(u.Warned[k]) {
		u.Warned[k] = t
	}
}
