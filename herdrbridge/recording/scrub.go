package recording

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Scrubber replaces what varies from one run to the next — the test's
// temporary paths, session and prompt ids, turn ids, times, herdr's pane
// ids — with stable names, so a recording is the same for the same
// behaviour and keeps nothing of the machine it was made on.
type Scrubber struct {
	// Literals are replaced first, longest first: Literals["/tmp/x/home"]
	// = "$HOME". A path's form with "/" as "-" (how Claude Code names a
	// project's directory) is replaced too.
	Literals map[string]string
	ids      map[string]string
	counts   map[string]int
}

var (
	uuidRe = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	ulidRe = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	// clockRe is a time of day a CLI shows ("done 1:03 PM").
	clockRe = regexp.MustCompile(`\b\d{1,2}:\d\d( ?[AP]M)?\b`)
	paneRe  = regexp.MustCompile(`\bw[0-9A-Z]+:p[0-9A-Z]+\b`)
	// sesRe is an OpenCode session id, msgRe an OpenCode message (its
	// hooks' prompt id); chatRe a Gemini CLI chat file's name (its start
	// time and session prefix).
	sesRe  = regexp.MustCompile(`\bses_[0-9A-Za-z]{20,}\b`)
	msgRe  = regexp.MustCompile(`\bmsg_[0-9A-Za-z]{20,}\b`)
	chatRe = regexp.MustCompile(`session-\d{4}-\d\d-\d\dT\d\d-\d\d-[0-9a-f]{8}`)
	// tmpRe catches temporary paths no literal named (a Go test's
	// t.TempDir and what lies below it).
	tmpRe = regexp.MustCompile(`(^|[^A-Za-z0-9_.$/-])/tmp/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*`)
	// launchRe is the launch script fleetd writes per spawn, named with
	// a random part.
	launchRe = regexp.MustCompile(`fleetd-launch-([a-z0-9_-]+?)-[0-9a-f]{16}-\d+\.sh`)
)

// id names a varying value stably: the first uuid seen is <uuid-1>.
func (s *Scrubber) id(kind, v string) string {
	if s.ids == nil {
		s.ids, s.counts = map[string]string{}, map[string]int{}
	}
	if n, ok := s.ids[v]; ok {
		return n
	}
	s.counts[kind]++
	n := fmt.Sprintf("<%s-%d>", kind, s.counts[kind])
	s.ids[v] = n
	return n
}

// Pane is the stable name of one of herdr's pane ids.
func (s *Scrubber) Pane(id string) string {
	if id == "" {
		return ""
	}
	return strings.Trim(s.id("pane", id), "<>")
}

// String scrubs s.
func (s *Scrubber) String(v string) string {
	keys := make([]string, 0, len(s.Literals))
	for k := range s.Literals {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		v = strings.ReplaceAll(v, k, s.Literals[k])
		if strings.HasPrefix(k, "/") {
			v = strings.ReplaceAll(v, strings.ReplaceAll(k, "/", "-"), strings.ReplaceAll(s.Literals[k], "/", "-"))
		}
	}
	v = uuidRe.ReplaceAllStringFunc(v, func(m string) string { return s.id("uuid", strings.ToLower(m)) })
	v = ulidRe.ReplaceAllStringFunc(v, func(m string) string { return s.id("ulid", m) })
	v = sesRe.ReplaceAllStringFunc(v, func(m string) string { return s.id("session", m) })
	v = msgRe.ReplaceAllStringFunc(v, func(m string) string { return s.id("message", m) })
	v = timeRe.ReplaceAllString(v, "<time>")
	v = chatRe.ReplaceAllString(v, "session-<time>-<id>")
	v = clockRe.ReplaceAllString(v, "<clock>")
	v = paneRe.ReplaceAllStringFunc(v, func(m string) string { return s.Pane(m) })
	v = tmpRe.ReplaceAllString(v, "${1}$$TMP")
	v = launchRe.ReplaceAllString(v, "fleetd-launch-$1-<id>.sh")
	return v
}

// Value scrubs every string in a decoded JSON value.
func (s *Scrubber) Value(v any) any {
	switch x := v.(type) {
	case string:
		return s.String(x)
	case []any:
		for i := range x {
			x[i] = s.Value(x[i])
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = s.Value(e)
		}
		return x
	}
	return v
}
