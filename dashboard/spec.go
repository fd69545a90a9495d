package dashboard

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/fleetd/fleetd/events"
)

// The views.
const (
	ViewFleet = "fleet"
	ViewTurns = "turns"
	ViewTurn  = "turn"
	ViewAgent = "agent"
	ViewJobs  = "jobs"
	ViewLog   = "log"
	ViewCost  = "cost"
)

// views lists every view; nav the ones the header links to.
var (
	views = []string{ViewFleet, ViewTurns, ViewTurn, ViewAgent, ViewJobs, ViewLog, ViewCost}
	nav   = []string{ViewFleet, ViewTurns, ViewJobs, ViewLog, ViewCost}
)

// spec is one view as a URL asks for it: which view, as of which point,
// and its filters. The page, its fragments and its stream take the same
// query.
type spec struct {
	View string
	At   Point
	// ID is the turn, agent or job the view is about.
	ID string
	// Turns' filters.
	Filter turnFilter
	// Subject filters the log view.
	Subject string
	// By and Since shape the cost view.
	By, Since string
	// raw is the query as given, for links that change one thing.
	raw url.Values
}

// parseSpec reads and checks a view's query strictly: anything wrong is
// said before anything is read.
func parseSpec(q url.Values, now time.Time) (spec, error) {
	s := spec{View: q.Get("view"), ID: q.Get("id"), Subject: q.Get("subject"), By: q.Get("by"), Since: q.Get("since"), raw: q}
	s.Filter = turnFilter{Agent: q.Get("agent"), Role: q.Get("role"), Job: q.Get("job"), State: q.Get("state")}
	if s.View == "" {
		s.View = ViewFleet
	}
	if !slices.Contains(views, s.View) {
		return s, fmt.Errorf("view %q: want one of %v", s.View, views)
	}
	at, err := ParseAt(q.Get("at"), now)
	if err != nil {
		return s, err
	}
	s.At = at
	if len(s.ID) > 256 {
		return s, fmt.Errorf("id longer than 256 bytes")
	}
	switch s.View {
	case ViewTurn, ViewAgent:
		if s.ID == "" {
			return s, fmt.Errorf("view %s needs an id", s.View)
		}
	case ViewLog:
		if s.Subject == "" {
			s.Subject = events.SubjectAll
		}
		if err := events.ValidFilter(s.Subject); err != nil {
			return s, fmt.Errorf("subject %q: %w", s.Subject, err)
		}
	case ViewCost:
		if s.By == "" {
			s.By = ByAgent
		}
		if !slices.Contains(CostBy, s.By) {
			return s, fmt.Errorf("by %q: want one of %v", s.By, CostBy)
		}
		if s.Since == "" {
			s.Since = "24h"
		}
		if _, err := costWindow(s.Since, now); err != nil {
			return s, err
		}
	case ViewTurns:
		if f := s.Filter.State; f != "" && !slices.Contains(turnStates, f) {
			return s, fmt.Errorf("state %q: want one of %v", f, turnStates)
		}
	}
	return s, nil
}

// Link is the page URL of this view with the given query keys changed
// (key, value, …; an empty value drops the key). The point in the log
// stays unless "at" is among them.
func (s spec) Link(kv ...string) string {
	q := url.Values{}
	for k, v := range s.raw {
		q[k] = slices.Clone(v)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return "/?" + q.Encode()
}

// To is the URL of another view as of the same point, with its own query
// (key, value, …).
func (s spec) To(view string, kv ...string) string {
	q := url.Values{"view": {view}}
	if at := s.raw.Get("at"); at != "" {
		q.Set("at", at)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return "/?" + q.Encode()
}

// Keep is the query but the point: what the time control carries over.
func (s spec) Keep() map[string]string {
	out := map[string]string{}
	for k := range s.raw {
		if k != "at" {
			out[k] = s.raw.Get(k)
		}
	}
	return out
}

// RawAt is the point as the query gave it ("" live), for forms that keep
// it.
func (s spec) RawAt() string { return s.raw.Get("at") }

// Query is the spec's query string, for the stream and fragment URLs.
func (s spec) Query() string { return s.raw.Encode() }
