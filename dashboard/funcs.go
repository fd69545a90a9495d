package dashboard

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
)

// funcs are the templates' helpers: times, ages, sizes and clipping.
func (s *Server) funcs() template.FuncMap {
	return template.FuncMap{
		"clock": clock,
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339Nano)
		},
		"ago":   Ago,
		"dur":   dur,
		"durMS": func(ms float64) string { return dur(time.Duration(ms * float64(time.Millisecond))) },
		"usd":   usd,
		"clip":  clip,
		"text": func(t string) string {
			if len(t) > s.cfg.MaxText {
				return t[:s.cfg.MaxText] + fmt.Sprintf("\n… (%d more bytes)", len(t)-s.cfg.MaxText)
			}
			return t
		},
		"short": short,
		"label": stateLabel,
		"pct":   func(used, limit float64) float64 { return 100 * used / limit },
		"state": AgentState,
		"join":  strings.Join,
		"bytes": byteSize,
		"int64": func(v int64) string { return fmt.Sprintf("%d", v) },
		"num": func(v int64) string {
			switch {
			case v >= 10_000_000:
				return fmt.Sprintf("%.1fM", float64(v)/1e6)
			case v >= 10_000:
				return fmt.Sprintf("%.1fk", float64(v)/1e3)
			}
			return fmt.Sprintf("%d", v)
		},
		"view": func(v string) string {
			return map[string]string{ViewFleet: "Fleet", ViewTurns: "Turns", ViewJobs: "Jobs", ViewLog: "Log", ViewCost: "Cost"}[v]
		},
		"costBy": func() []string { return CostBy },
		"list":   func(v ...string) []string { return v },
		// inc numbers a dialog's options from 1, as its answer names them.
		"inc": func(i int) int { return i + 1 },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"lifeLine": lifeLine,
		// here is this dashboard's host: only its agents' panes can be
		// stopped or restarted from it (the shim in front asks its own
		// gateway).
		"here": func() string { return s.cfg.Host },
	}
}

// lifeLine says what one of an agent's registered, session or exited
// events did.
func lifeLine(ev events.Event) string {
	switch d := ev.Data.(type) {
	case events.AgentRegistered:
		return fmt.Sprintf("registered in pane %s on %s (%s)", orDash(d.Pane), d.Host, orDash(d.Origin))
	case events.AgentSession:
		line := "session " + d.State
		if why := strings.TrimSpace(d.Source + " " + d.Reason); why != "" {
			line += " (" + why + ")"
		}
		if d.SessionID != "" {
			line += " " + d.SessionID
		}
		return line
	case events.AgentExited:
		return strings.TrimSpace("pane exited " + d.Reason)
	case events.AgentRestart:
		line := "restart " + d.State
		if d.Cause != "" {
			line += " (" + d.Cause + ")"
		}
		if d.Pane != "" {
			line += " in pane " + d.Pane
		}
		if d.Message != "" {
			line += ": " + d.Message
		}
		return line
	}
	return events.Describe(ev)
}

// clock is a time of day to the millisecond, in the server's zone (the
// page shows its own zone's from the data-t stamps).
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("15:04:05.000")
}

// Ago is how long before now t was, coarsely ("now", "42s ago", "5m
// ago", "3h ago", "2d ago"; "-" for no time); the page keeps it current.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// dur renders a duration to a sensible precision.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// short is the tail of a ULID: enough to tell turns apart on a page.
func short(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
