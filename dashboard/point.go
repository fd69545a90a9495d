package dashboard

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
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

// earliest is the first time a point may name: the log's events carry
// real clocks, so a time before 1970 (the zero time, year 1, which would
// read as live) is a mistake, not a moment of the fleet.
var earliest = time.Unix(0, 0)

// future is how far past now a time may be: a step forward from a recent
// point (the page's "+1m") shows the present; a time beyond it is a
// mistake.
const future = 24 * time.Hour

// maxAgo is the longest duration ago: a century, far before any log, and
// far from time.Duration's overflow (292 years), which made "1000000d"
// negative.
const maxAgo = 100 * 365 * 24 * time.Hour

// durationRE is what a duration ago looks like ("10m", "1h30m", "2d"),
// so one too large to read is told as such.
// Compiled on first use, not as every fleetd process (each hook run) starts.
var durationRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?[0-9][0-9.]*(ns|us|µs|ms|s|m|h|d)([0-9.]+(ns|us|µs|ms|s|m|h))*$`)
})

// ParseAt reads a point in the log as people write one: "" or "live" (the
// present), "#42" (a stream sequence), a duration ago ("10m", "36h",
// "2d", at most 100 years), an RFC 3339 time, a date and time without a
// zone, or a clock time ("14:02", "14:02:10") — the last within a day
// before now. Times without a zone are in now's location. A time before
// 1970 or more than a day after now is refused; one after now shows the
// present.
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
	if d, err := parseAgo(s); err == nil || durationRE().MatchString(s) {
		switch {
		case err != nil || d > maxAgo:
			return Point{}, fmt.Errorf("%w: %q: a duration ago is at most 100 years (36500d, 876000h)", ErrBadPoint, s)
		case d <= 0:
			return Point{}, fmt.Errorf("%w: %q: a duration ago must be positive", ErrBadPoint, s)
		}
		return Point{Time: now.Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return timePoint(s, t, now)
	}
	loc := now.Location()
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return timePoint(s, t, now)
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

// timePoint is t as a point, unless it is too early or too late to be
// one.
func timePoint(s string, t, now time.Time) (Point, error) {
	switch {
	case t.Before(earliest):
		return Point{}, fmt.Errorf("%w: %q: before 1970: want a time the log holds (14:02:10, RFC 3339), a duration ago (10m, 2d), #<sequence> or live", ErrBadPoint, s)
	case t.After(now.Add(future)):
		return Point{}, fmt.Errorf("%w: %q: more than a day after now (%s): want a time up to now; later shows the present", ErrBadPoint, s, now.UTC().Format(time.RFC3339))
	}
	return Point{Time: t}, nil
}

// parseAgo is time.ParseDuration that also takes whole days ("2d").
func parseAgo(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		if n > int(maxAgo/(24*time.Hour)) {
			return 0, fmt.Errorf("%d days: out of range", n)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
