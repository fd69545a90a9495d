package orchestrator

import (
	"fmt"
	"strings"
)

// Progress is one task transition, for progress lines.
type Progress struct {
	Job  string
	Task string
	// State: "sent", "reattached", "replied", "failed", or "done" (Task
	// empty: the job ended).
	State string
	To    string
	Agent string
	Turn  string
	// Items and Bytes describe the slice sent.
	Items []string
	Bytes int
	Error string
	// Rollup is the reply (replied) or the job's result (done).
	Rollup string
}

// String is the transition as one line of a progress log (without a
// time stamp): what a person watching `fleetd orchestrate` reads.
func (p Progress) String() string {
	switch p.State {
	case "sent":
		return fmt.Sprintf("%-12s sent       → %s (%s) turn %s, slice [%s] %dB", p.Task, p.Agent, p.To, p.Turn, strings.Join(p.Items, " "), p.Bytes)
	case "reattached":
		return fmt.Sprintf("%-12s reattached → %s turn %s", p.Task, p.To, p.Turn)
	case "replied":
		return fmt.Sprintf("%-12s replied    ← %s %q", p.Task, p.Agent, clip(p.Rollup, 60))
	case "failed":
		return fmt.Sprintf("%-12s FAILED     %s: %s", p.Task, p.Agent, p.Error)
	case "done":
		status := "ok"
		if p.Error != "" {
			status = "failed: " + p.Error
		}
		return fmt.Sprintf("job %s done: %s", p.Job, status)
	}
	return fmt.Sprintf("%-12s %s", p.Task, p.State)
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
