package clitable

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/leadshim"
)

// Timeline writes a turn's steps, one a line: when, the time since the
// step before, the step, what it says.
func Timeline(w io.Writer, tl dashboard.Timeline) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range tl.Steps {
		delta := ""
		if s.SincePrevMS > 0 {
			delta = "+" + (time.Duration(s.SincePrevMS * float64(time.Millisecond))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.At.Local().Format("15:04:05.000"), delta, s.Step, s.Detail)
	}
	return tw.Flush()
}

// Cost writes the cost report: its window, then one row a group and the
// total, numbers aligned right.
func Cost(w io.Writer, r dashboard.CostReport) error {
	from := "the log's start"
	if !r.From.IsZero() {
		from = r.From.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(w, "from %s to %s, by %s\n", from, r.To.Local().Format("2006-01-02 15:04:05"), r.By)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tTURNS\tIN\tOUT\tCACHE READ\tCACHE WRITE\tUSD\t\n", strings.ToUpper(r.By))
	for _, row := range append(r.Rows, r.Total) {
		key := row.Key
		if key == "" {
			key = "TOTAL"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.6f\t\n", key, row.Turns, row.Tokens.In, row.Tokens.Out,
			row.Tokens.CacheRead, row.Tokens.CacheCreation, row.CostUSD)
	}
	return tw.Flush()
}

// Turn writes a turn as 'fleetd turn' shows it: a line of its state and
// usage, its timeline (when tl has steps) and, once replied, its reply.
func Turn(w io.Writer, env leadshim.Envelope, tl dashboard.Timeline) error {
	fmt.Fprintf(w, "turn %s: %s  agent=%s role=%s model=%s tokens=%d/%d duration=%s\n",
		env.ID, env.Status, Dash(env.Agent), Dash(env.Role), Dash(env.Model), env.Tokens.In, env.Tokens.Out,
		(time.Duration(env.DurationMS) * time.Millisecond).String())
	if err := Timeline(w, tl); err != nil {
		return err
	}
	if env.Status == "replied" {
		_, err := fmt.Fprintln(w, env.Reply)
		return err
	}
	return nil
}

// Reply writes a replied turn's reply as 'fleetd send' prints it: as the
// agent wrote it, ending in one newline; nothing for a turn not replied.
func Reply(w io.Writer, env leadshim.Envelope) error {
	if env.Status != "replied" {
		return nil
	}
	reply := env.Reply
	if !strings.HasSuffix(reply, "\n") {
		reply += "\n"
	}
	_, err := io.WriteString(w, reply)
	return err
}
