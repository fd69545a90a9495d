package retention

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrPolicy means a retention policy could not be parsed.
var ErrPolicy = errors.New("retention: invalid policy")

// Policy is how much of the log is kept beyond what readers need: events
// older than MaxAge, or the oldest events once the stream holds more than
// MaxBytes, are trimmed (each 0: no limit of that kind). The zero Policy
// keeps everything.
type Policy struct {
	MaxAge   time.Duration
	MaxBytes int64
}

// DefaultPolicy keeps a week.
var DefaultPolicy = Policy{MaxAge: 7 * 24 * time.Hour}

// Forever reports whether p trims nothing.
func (p Policy) Forever() bool { return p.MaxAge <= 0 && p.MaxBytes <= 0 }

// String is p as ParsePolicy reads it.
func (p Policy) String() string {
	if p.Forever() {
		return "forever"
	}
	var parts []string
	if p.MaxAge > 0 {
		parts = append(parts, durationText(p.MaxAge))
	}
	if p.MaxBytes > 0 {
		parts = append(parts, sizeText(p.MaxBytes))
	}
	return strings.Join(parts, ",")
}

// ParsePolicy reads a policy: "forever" (or "none", "0"), an age ("7d",
// "36h", "90m"; d is 24h, w 7d), a size ("500MB", "2GiB", "1048576"), or
// an age and a size separated by a comma ("7d,2GB"): whichever trims
// more.
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "", "forever", "none", "0":
		return Policy{}, nil
	}
	var p Policy
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if d, err := parseAge(part); err == nil {
			if p.MaxAge != 0 || d <= 0 {
				return Policy{}, fmt.Errorf("%w: %q: one positive age at most", ErrPolicy, s)
			}
			p.MaxAge = d
			continue
		}
		n, err := parseSize(part)
		if err != nil || n <= 0 || p.MaxBytes != 0 {
			return Policy{}, fmt.Errorf("%w: %q: want forever, an age (7d, 36h), a size (500MB, 2GiB) or both (7d,2GB)", ErrPolicy, s)
		}
		p.MaxBytes = n
	}
	return p, nil
}

// ParseAge reads a duration that may use d (days) and w (weeks) as well
// as Go's units; "forever", "none" and "0" are 0.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "", "forever", "none", "0":
		return 0, nil
	}
	d, err := parseAge(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %q: want a duration like 7d, 36h or 90m, or forever", ErrPolicy, s)
	}
	return d, nil
}

func parseAge(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(f * float64(unit)), nil
		}
	}
	return time.ParseDuration(s)
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1},
}

func parseSize(s string) (int64, error) {
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil {
				return 0, err
			}
			return int64(f * float64(u.mult)), nil
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

func durationText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

func sizeText(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
