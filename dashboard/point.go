package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Point is where in the log a view is shown as of: a time, or a stream
// sequence. The zero Point is live.
type Point struct {
	Time time.Time
	Seq  uint64
}

// Live reports whether p names no point: the present, kept current.
func (p Point) Live() bool { return p.Time.IsZero() && p.Seq == 0 }

// String is p as ?at= and --at take it back: "#<seq>", an RFC 3339 time
// in UTC, or "" for live.
func (p Point) String() string {
	switch {
	case p.Seq > 0:
		return "#" + strconv.FormatUint(p.Seq, 10)
	case !p.Time.IsZero():
		return p.Time.UTC().Format(time.RFC3339Nano)
	}
	return ""
}

// localLayouts are the times people write without a zone, read in the
// zone of now: what a datetime-local input sends, and a clock time today.
var localLayouts = []string{
	"2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04",
}

var clockLayouts = []string{"15:04:05.999999999", "15:04"}

// ParseAt reads a point in the log as people write one: "" or "live" (the
// present), "#42" (a stream sequence), a duration ago ("10m", "36h",
// "2d"), an RFC 3339 time, a date and time without a zone, or a clock
// time ("14:02", "14:02:10") — the last within a day before now. Times
// without a zone are in now's location.
func ParseAt(s string, now time.Time) (Point, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "live" || s == "now":
		return Point{}, nil
	case strings.HasPrefix(s, "#"):
		seq, err := strconv.ParseUint(s[1:], 10, 64)
		if err != nil || seq == 0 {
			return Point{}, fmt.Errorf("%w: %q: want #<sequence>, from #1", ErrBadPoint, s)
		}
		return Point{Seq: seq}, nil
	}
	if d, err := parseAgo(s); err == nil {
		if d <= 0 {
			return Point{}, fmt.Errorf("%w: %q: a duration ago must be positive", ErrBadPoint, s)
		}
		return Point{Time: now.Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Point{Time: t}, nil
	}
	loc := now.Location()
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return Point{Time: t}, nil
		}
	}
	for _, layout := range clockLayouts {
		c, err := time.ParseInLocation(layout, s, loc)
		if err != nil {
			continue
		}
		y, m, d := now.Date()
		t := time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), loc)
		if t.After(now) {
			t = t.AddDate(0, 0, -1)
		}
		return Point{Time: t}, nil
	}
	return Point{}, fmt.Errorf("%w: %q: want a time (14:02:10, RFC 3339), a duration ago (10m, 2d), #<sequence> or live", ErrBadPoint, s)
}

// parseAgo is time.ParseDuration that also takes whole days ("2d").
func parseAgo(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
