package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// The groupings of a cost report.
const (
	ByAgent   = "agent"
	ByRole    = "role"
	BySession = "session"
	ByJob     = "job"
	ByKind    = "kind" // the agents' CLI: claude, …
)

// CostBy lists the groupings a cost report takes.
var CostBy = []string{ByAgent, ByRole, BySession, ByJob, ByKind}

// noKey is the group of usage nothing attributes (a turn with no job).
const noKey = "(none)"

// CostReport is what the hooks recorded (each replied event's tokens and
// cost, read from the agents' transcripts) between From and To, summed by
// agent, role, session, job or kind: the dashboard's cost view and `fleetd
// cost`.
type CostReport struct {
	By   string    `json:"by"`
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to"`
	// Rows are the groups, costliest first; Total their sum.
	Rows  []CostRow `json:"rows"`
	Total CostRow   `json:"total"`
	At    string    `json:"at,omitempty"`
}

// CostRow is one group's usage: Turns replied, their tokens and cost.
type CostRow struct {
	Key     string        `json:"key"`
	Turns   int           `json:"turns"`
	Tokens  events.Tokens `json:"tokens"`
	CostUSD float64       `json:"cost_usd"`
}

// costWindow reads a report's start: a duration before to ("24h", "7d"),
// a time, or "all" (the log's start).
func costWindow(since string, to time.Time) (time.Time, error) {
	switch since {
	case "all":
		return time.Time{}, nil
	case "":
		return to.Add(-24 * time.Hour), nil
	}
	if d, err := parseAgo(since); err == nil && d > 0 {
		return to.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("since %q: want a duration (24h, 7d), an RFC 3339 time or all", since)
}

// costs sums the replied events of a window into a report as they come:
// a live cost view adds each new one.
type costs struct {
	report CostReport
	groups map[string]*CostRow
	seen   map[string]bool // event ids: a re-appended reply counts once
	src    source
	seq    uint64
}

func newCosts(src source, by string, from, to time.Time) *costs {
	return &costs{report: CostReport{By: by, From: from, To: to, At: src.point.String()},
		groups: map[string]*CostRow{}, seen: map[string]bool{}, src: src}
}

// add counts one replied event (a turn), or the usage event of a reply
// that came before its usage, in the group by says.
func (c *costs) add(ctx context.Context, ev events.Event) {
	c.seq = max(c.seq, ev.Seq)
	var (
		turns   int
		session string
		tokens  events.Tokens
		usd     float64
	)
	switch d := ev.Data.(type) {
	case events.AgentReplied:
		turns, session, tokens, usd = 1, d.SessionID, d.Tokens, d.CostUSD
	case events.AgentUsage:
		session, tokens, usd = d.SessionID, d.Tokens, d.CostUSD
	default:
		return
	}
	if c.seen[ev.ID] {
		return
	}
	c.seen[ev.ID] = true
	key := c.key(ctx, ev, session)
	g, ok := c.groups[key]
	if !ok {
		g = &CostRow{Key: key}
		c.groups[key] = g
	}
	for _, r := range []*CostRow{g, &c.report.Total} {
		r.Turns += turns
		r.Tokens = r.Tokens.Add(tokens)
		r.CostUSD += usd
	}
	if ev.Time.After(c.report.To) {
		c.report.To = ev.Time
	}
}

func (c *costs) key(ctx context.Context, ev events.Event, sessionID string) string {
	views := c.src.views
	turn := func() (lifecycle.Turn, bool) {
		t, ok, err := views.Turn(ctx, lifecycle.TurnID(ev))
		return t, ok && err == nil
	}
	switch c.report.By {
	case ByRole:
		if a, ok := views.Agent(ev.Subject); ok && a.Role != "" {
			return a.Role
		}
		if t, ok := turn(); ok && t.Role != "" {
			return t.Role
		}
	case BySession:
		if sessionID != "" {
			for _, s := range views.Sessions() {
				if s.SessionID == sessionID {
					return s.Name
				}
			}
			return sessionID
		}
	case ByJob:
		if t, ok := turn(); ok && t.Job != "" {
			return t.Job
		}
	case ByKind:
		if a, ok := views.Agent(ev.Subject); ok && a.Kind != "" {
			return a.Kind
		}
	default:
		return ev.Subject
	}
	return noKey
}

// done is the report: groups costliest first.
func (c *costs) done() CostReport {
	r := c.report
	r.Rows = make([]CostRow, 0, len(c.groups))
	for _, g := range c.groups {
		r.Rows = append(r.Rows, *g)
	}
	slices.SortFunc(r.Rows, func(x, y CostRow) int {
		if c := cmp.Compare(y.CostUSD, x.CostUSD); c != 0 {
			return c
		}
		return cmp.Compare(x.Key, y.Key)
	})
	return r
}

// costSubjects are every agent's replied events and the usage events of
// replies that came before their usage.
var costSubjects = []string{"fleet.agent.*.replied", "fleet.agent.*.usage"}

// cost reads the window's replied events up to the view's point and sums
// them; it returns the sums so far, for a live view to go on adding to.
func (s *Server) cost(ctx context.Context, src source, by, since string) (*costs, error) {
	if !slices.Contains(CostBy, by) {
		return nil, fmt.Errorf("by %q: want one of %v", by, CostBy)
	}
	from, err := costWindow(since, src.now)
	if err != nil {
		return nil, err
	}
	c := newCosts(src, by, from, src.now)
	end, ok := src.readTo()
	if !ok {
		return c, nil
	}
	if end == 0 {
		for _, subj := range costSubjects {
			last, err := s.cfg.Log.LastSeq(ctx, subj)
			if err != nil {
				return nil, err
			}
			end = max(end, last)
		}
	}
	c.seq = end
	if end == 0 {
		return c, nil
	}
	q := events.Query{Subjects: costSubjects, Since: from, ToSeq: end}
	for ev, err := range s.cfg.Log.Read(ctx, q) {
		if err != nil {
			return nil, fmt.Errorf("read replies: %w", err)
		}
		c.add(ctx, ev)
	}
	return c, nil
}
