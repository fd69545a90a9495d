package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Getter is how a client reaches a fleetd's HTTP API: a request whose JSON
// answer is decoded into out — leadshim.Client's Do, with fleetd's address,
// token and errors. Taking it as an interface keeps this package free of
// the shim.
type Getter interface {
	Do(ctx context.Context, method, path string, in, out any) error
}

// API reads the dashboard's JSON API through Get, for clients such as
// `fleetd roster --at`, `fleetd turn` and `fleetd cost`: the routes stay
// here, beside the handlers that serve them.
type API struct {
	Get Getter
}

// RosterAt is the roster as of at.
func (a API) RosterAt(ctx context.Context, at Point) (RosterAt, error) {
	var r RosterAt
	err := a.Get.Do(ctx, http.MethodGet, "/ui/api/roster?at="+url.QueryEscape(at.String()), nil, &r)
	return r, err
}

// Timeline is a turn's timeline; a fleetd without a dashboard answers 404.
func (a API) Timeline(ctx context.Context, turn string) (Timeline, error) {
	var tl Timeline
	err := a.Get.Do(ctx, http.MethodGet, "/ui/api/turns/"+url.PathEscape(turn), nil, &tl)
	return tl, err
}

// Cost is the cost report by by (CostBy) over since — as SinceParam
// gives it — ending at at (live when at is).
func (a API) Cost(ctx context.Context, by, since string, at Point) (CostReport, error) {
	q := url.Values{"by": {by}, "since": {since}}
	if !at.Live() {
		q.Set("at", at.String())
	}
	var r CostReport
	err := a.Get.Do(ctx, http.MethodGet, "/ui/api/cost?"+q.Encode(), nil, &r)
	return r, err
}

// SinceParam is a report's start as a person wrote it (a duration before
// its end, a time, or all) as the cost API takes it. A time — durations
// hold no colon — is read here, in now's location as ParseAt reads --at,
// and sent in UTC: the server would read a bare time in its own zone.
// Anything else goes as given, for the server to judge. A time that
// cannot be read is ErrBadPoint.
func SinceParam(since string, now time.Time) (string, error) {
	if !strings.Contains(since, ":") {
		return since, nil
	}
	p, err := ParseAt(since, now)
	if err != nil {
		return "", err
	}
	if p.Time.IsZero() {
		return "", ErrBadPoint
	}
	return p.Time.UTC().Format(time.RFC3339Nano), nil
}
