package clitable

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
)

// Table is how one listing prints as text: a header, one line a row, and
// what to say when there are no rows. Line gets the time the listing is
// as of, so "2m ago" columns count from it (a listing of the past, or a
// test's fixed clock).
type Table[T any] struct {
	Header string
	Line   func(row T, now time.Time) string
	Empty  string
}

// Write writes rows under the header, their columns (tab-separated in
// Header and Line) aligned; with no rows, Empty under the header.
func (t Table[T]) Write(w io.Writer, rows []T, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, t.Header)
	for _, r := range rows {
		fmt.Fprintln(tw, t.Line(r, now))
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, t.Empty)
	}
	return tw.Flush()
}

// Print writes rows as a listing command prints them: as JSON with
// asJSON (a script's form), else as the table, as of now.
func (t Table[T]) Print(w io.Writer, rows []T, now time.Time, asJSON bool) error {
	if asJSON {
		return JSON(w, rows)
	}
	return t.Write(w, rows, now)
}

// JSON writes v as indented JSON, with <, > and & as they are: the --json
// form of every listing and reply, which scripts read and people grep.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Dash is s, or "-" for an empty column, so every row keeps its columns.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago is how long before now t was, as the dashboard says it, but a date
// beyond two days: a terminal's table is read later, the page is live.
func ago(now, t time.Time) string {
	if !t.IsZero() && now.Sub(t) >= 48*time.Hour {
		return t.Local().Format("2006-01-02")
	}
	return dashboard.Ago(now, t)
}

// Event writes one event a line, as 'fleetd tail' prints the log: as
// events.Describe says it, or with asJSON its CloudEvents envelope.
func Event(w io.Writer, ev events.Event, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprintln(w, events.Describe(ev))
		return err
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
