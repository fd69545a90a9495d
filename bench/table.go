package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Status values of a row.
const (
	StatusOK   = "ok"
	StatusMiss = "MISS"
	StatusNone = "-"    // informational: no target
	StatusSkip = "skip" // could not be measured here (Note says why)
	StatusFail = "FAIL" // the workload broke (Note says how)
)

// Units of a row's values.
const (
	UnitMs     = "ms"
	UnitPerSec = "ev/s"
	UnitMB     = "MB"
	UnitCount  = "events"
	UnitSec    = "s"
)

// Row is one measured line of the table: a median (or single value) and
// p99, beside the baseline measured in the same run, and the target.
type Row struct {
	Name string `json:"name"`
	// Sync is the embedded server's SyncAlways (fsync before every ack).
	Sync bool    `json:"sync_always"`
	N    int     `json:"n"`
	Unit string  `json:"unit"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99,omitempty"`
	// Base is the baseline measured beside the row (same unit), named by
	// BaseName; Versus compares the two as the target does ("+12.0ms",
	// "0.93×").
	Base     float64 `json:"base,omitempty"`
	BaseName string  `json:"base_name,omitempty"`
	Versus   string  `json:"versus,omitempty"`
	Target   string  `json:"target,omitempty"`
	Status   string  `json:"status"`
	Note     string  `json:"note,omitempty"`
}

// Check sets the row's status from whether its target was met.
func (r *Row) Check(ok bool) {
	r.Status = StatusMiss
	if ok {
		r.Status = StatusOK
	}
}

// Ratio fills Versus with p50/base as "0.93×" and returns the ratio.
func (r *Row) Ratio() float64 {
	if r.Base == 0 {
		return 0
	}
	x := r.P50 / r.Base
	r.Versus = fmt.Sprintf("%.2f×", x)
	return x
}

// Delta fills Versus with p50 - base as "+12.0ms" and returns it.
func (r *Row) Delta() float64 {
	d := r.P50 - r.Base
	r.Versus = fmt.Sprintf("%+.1f%s", d, r.Unit)
	return d
}

// Format renders v in unit u for the table.
func Format(v float64, u string) string {
	switch u {
	case UnitMs:
		switch {
		case v == 0:
			return "0ms"
		case v < 10:
			return fmt.Sprintf("%.2fms", v)
		case v < 1000:
			return fmt.Sprintf("%.1fms", v)
		}
		return fmt.Sprintf("%.2fs", v/1000)
	case UnitPerSec:
		if v < 10_000 {
			return fmt.Sprintf("%.0f ev/s", v)
		}
		return fmt.Sprintf("%.0fk ev/s", v/1000)
	case UnitMB:
		return fmt.Sprintf("%.1f MB", v)
	case UnitCount:
		return fmt.Sprintf("%.1f", v)
	case UnitSec:
		return fmt.Sprintf("%.2fs", v)
	}
	return fmt.Sprintf("%g %s", v, u)
}

// Report is one run: the machine it ran on and its rows.
type Report struct {
	Machine Machine       `json:"machine"`
	Mode    string        `json:"mode"`
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Load is the machine's load average when the run started: other
	// work on the machine moves every number.
	Load string `json:"load_average"`
	Rows []Row  `json:"rows"`
}

// Machine says where the numbers came from.
type Machine struct {
	CPU   string `json:"cpu"`
	Cores int    `json:"cores"`
	MemGB int    `json:"mem_gb"`
	OS    string `json:"os"`
	Go    string `json:"go"`
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemGB = (kb + 1<<19) >> 20
		}
	}
	return m
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute figures, or "".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Sort groups the rows by name (in the order names first appear), a
// row measured under agentapi right after its peer under herdr, with
// SyncAlways on before off.
func (r *Report) Sort() {
	first := map[string]int{}
	for i, row := range r.Rows {
		if _, ok := first[row.base()]; !ok {
			first[row.base()] = i
		}
	}
	slices.SortStableFunc(r.Rows, func(a, b Row) int {
		if c := cmp.Compare(first[a.base()], first[b.base()]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c // the herdr row's name is the shorter one
		}
		switch {
		case a.Sync == b.Sync:
			return 0
		case a.Sync:
			return -1
		}
		return 1
	})
}

// base is the row's name without the runtime it was measured under.
func (r Row) base() string { return strings.TrimSuffix(r.Name, UnderAgentapi) }

// Print writes the report as one aligned table.
func (r Report) Print(w io.Writer) error {
	fmt.Fprintf(w, "fleetd bench (%s) on %s, %d cores, %d GB, %s, %s; load average %s at start; took %s\n\n", r.Mode,
		r.Machine.CPU, r.Machine.Cores, r.Machine.MemGB, r.Machine.OS, r.Machine.Go, r.Load, r.Elapsed.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tSYNC\tN\tMEDIAN\tP99\tBASELINE (same run)\tVS BASE\tTARGET\tOK")
	for _, row := range r.Rows {
		sync := "off"
		if row.Sync {
			sync = "on"
		}
		p50, p99, base := Format(row.P50, row.Unit), "-", "-"
		if row.Status == StatusSkip {
			p50 = "-"
		}
		if row.P99 != 0 {
			p99 = Format(row.P99, row.Unit)
		}
		if row.BaseName != "" {
			base = Format(row.Base, row.Unit) + " " + row.BaseName
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Name, sync, row.N, p50, p99, base,
			dash(row.Versus), dash(row.Target), row.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Each distinct note once; a note that differs by setting says which.
	var notes []string
	seen := map[string]bool{}
	for _, row := range r.Rows {
		if row.Note == "" || seen[row.Name+row.Note] {
			continue
		}
		seen[row.Name+row.Note] = true
		label := row.Name
		for _, o := range r.Rows {
			if o.Name == row.Name && o.Sync != row.Sync && o.Note != row.Note {
				label += " (sync " + map[bool]string{true: "on", false: "off"}[row.Sync] + ")"
				break
			}
		}
		notes = append(notes, "  "+label+": "+row.Note)
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

// JSON writes the report as indented JSON.
func (r Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
