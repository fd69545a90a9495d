package eventcore

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StartAt sets where q starts reading from a point in the log as people
// write one: "all" (the start), "#42" (a stream sequence), a duration ago
// ("10m", relative to now) or a time (RFC 3339). "" leaves q unchanged.
// `fleetd tail --since` reads it; so can anything that shows the log as
// of a point.
func (q *Query) StartAt(point string, now time.Time) error {
	switch {
	case point == "" || point == "all":
	case strings.HasPrefix(point, "#"):
		seq, err := strconv.ParseUint(point[1:], 10, 64)
		if err != nil || seq == 0 {
			return fmt.Errorf("%q: want #<sequence>, from #1", point)
		}
		q.FromSeq = seq
	default:
		if d, err := time.ParseDuration(point); err == nil {
			q.Since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, point); err == nil {
			q.Since = t
		} else {
			return fmt.Errorf("%q: want a duration (10m), a time (RFC 3339), #<sequence> or all", point)
		}
	}
	return nil
}
