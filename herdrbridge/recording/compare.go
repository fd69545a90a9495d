package recording

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetd/fleetd/herdrbridge"
)

// Summary is what a reviewer reads of a recording when a CLI is bumped:
// the versions; the status sequence herdr, the hooks and the log showed;
// each log event with its payload's fields (the hooks' payloads among
// them); the writes the bridge made; the bottom rows of the screen
// (around the composer) at each change of decision; the decisions. Two
// summaries diff line by line (Diff).
func Summary(k herdrbridge.Kind, r *Recording) []string {
	out := []string{
		fmt.Sprintf("# %s / %s", r.Kind, r.Scenario),
		"cli: " + r.Versions.CLI,
		"runtime: " + r.Versions.Runtime,
		"",
		"## status",
	}
	var herdr, reports, logged, before []string
	for _, st := range r.Steps {
		switch {
		case st.Op == OpBefore:
			b := st.Event + " " + cmp.Or(st.State, "none")
			if st.Event == BeforeHerdr {
				b += " (" + cmp.Or(st.Text, "no agent named") + ")"
			}
			before = append(before, b)
		case st.Op == OpHerdr && st.Event == "pane_agent_status_changed":
			herdr = appendChanged(herdr, st.State)
		case st.Op == OpReport:
			reports = appendChanged(reports, st.State)
		case st.Op == OpLog && st.Event == "status":
			// herdr's statuses are on the line above; the log's own
			// line is what the hooks (and the screen) said.
			s, _ := st.Data["status"].(string)
			src, _ := st.Data["source"].(string)
			if src != "herdr" {
				logged = appendChanged(logged, s+"("+src+")")
			}
		}
	}
	if len(before) > 0 {
		out = append(out, "before:  "+strings.Join(before, ", "))
	}
	out = append(out, "herdr:   "+strings.Join(herdr, " → "), "reports: "+strings.Join(reports, " → "), "log:     "+strings.Join(logged, " → "), "", "## events and writes")
	for _, st := range r.Steps {
		switch st.Op {
		case OpLog:
			if st.Event == "status" {
				continue
			}
			out = append(out, fmt.Sprintf("log %s %s%s", st.Event, st.Turn, fields(st.Data)))
		case OpInput, OpPrompt:
			out = append(out, fmt.Sprintf("%s %s %q%s", st.Op, st.Pane, clip(st.Text, 80), keysOf(st.Keys)))
		case OpKeys:
			out = append(out, fmt.Sprintf("keys %s%s", st.Pane, keysOf(st.Keys)))
		case OpNote:
			out = append(out, fmt.Sprintf("note %s %s", st.Pane, st.Text))
		case OpHerdr:
			if st.Event != "pane_agent_status_changed" && st.Event != "pane_updated" {
				out = append(out, fmt.Sprintf("herdr %s %s %s", st.Event, st.Pane, st.State))
			}
		}
	}
	// Decisions without their read numbers: how many looks a wait took
	// varies from run to run, what they said does not.
	out = append(out, "", "## screens around the composer, at each change of decision")
	res := Replay(k, r)
	reads := readScreens(r)
	last := ""
	var decisions []string
	for _, d := range res.Decisions {
		first, ok := firstRead(d)
		if !ok {
			decisions = append(decisions, d)
			continue
		}
		d = "look " + d[strings.Index(d, " pane")+1:]
		if len(decisions) == 0 || decisions[len(decisions)-1] != d {
			decisions = append(decisions, d)
		}
		if first > len(reads) {
			continue
		}
		bottom := bottomRows(r.Screens[reads[first-1]], 6)
		if bottom == last {
			continue
		}
		last = bottom
		out = append(out, "at "+d)
		for _, row := range strings.Split(bottom, "\n") {
			out = append(out, "  | "+row)
		}
	}
	out = append(out, "", "## decisions")
	out = append(out, decisions...)
	if len(res.Problems) > 0 {
		out = append(out, "", "## problems")
		out = append(out, res.Problems...)
	}
	return out
}

func appendChanged(seq []string, s string) []string {
	if len(seq) > 0 && seq[len(seq)-1] == s {
		return seq
	}
	return append(seq, s)
}

func keysOf(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return " " + fmt.Sprint(keys)
}

// volatile are payload fields whose values differ from run to run though
// nothing changed (timings).
var volatile = map[string]bool{"duration_ms": true, "state_change_seq": true, "seq": true, "tokens": true}

// fields renders a payload's fields, sorted: names and short values.
func fields(d map[string]any) string {
	if len(d) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		v := fmt.Sprint(d[k])
		if volatile[k] {
			v = "…"
		}
		if s, ok := d[k].(string); ok {
			v = fmt.Sprintf("%q", clip(s, 60))
		}
		parts = append(parts, k+"="+v)
	}
	return " {" + strings.Join(parts, " ") + "}"
}

// readScreens is the screen of each read, in order (read n is [n-1]).
func readScreens(r *Recording) []int {
	var out []int
	for _, st := range r.Steps {
		if st.Op == OpRead {
			out = append(out, st.Screen)
		}
	}
	return out
}

// firstRead is the first read a decision line is about.
func firstRead(d string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(d, "read %d", &n); err == nil {
		return n, true
	}
	if _, err := fmt.Sscanf(d, "reads %d-", &n); err == nil {
		return n, true
	}
	return 0, false
}

// bottomRows is the last n non-blank rows of a screen, right-trimmed.
func bottomRows(screen string, n int) string {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	var out []string
	for i := len(rows) - 1; i >= 0 && len(out) < n; i-- {
		if r := strings.TrimRight(rows[i], " \u00a0"); strings.TrimSpace(r) != "" {
			out = append([]string{r}, out...)
		}
	}
	return strings.Join(out, "\n")
}

// Diff is a unified line diff of a (before) and b (after): "- " lines
// only in a, "+ " only in b, with context lines around each change; ""
// when they are equal.
func Diff(a, b []string, context int) string {
	// The longest common subsequence, by dynamic programming: summaries
	// are a few hundred lines.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	show := make([]bool, len(lines))
	changed := false
	for k, l := range lines {
		if l.mark != ' ' {
			changed = true
			for c := max(0, k-context); c <= min(len(lines)-1, k+context); c++ {
				show[c] = true
			}
		}
	}
	if !changed {
		return ""
	}
	var sb strings.Builder
	gap := false
	for k, l := range lines {
		if !show[k] {
			gap = true
			continue
		}
		if gap && sb.Len() > 0 {
			sb.WriteString("@@\n")
		}
		gap = false
		sb.WriteByte(l.mark)
		sb.WriteByte(' ')
		sb.WriteString(l.text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// Check replays r and says, in words a reviewer can act on, where it
// disagrees with what was recorded: the decisions that changed (as a
// diff naming each read and turn) and the problems.
func Check(k herdrbridge.Kind, r *Recording) error {
	res := Replay(k, r)
	var msg []string
	if d := Diff(r.Decisions, res.Decisions, 2); d != "" {
		msg = append(msg, "the decisions changed (- recorded, + replayed):\n"+d)
	}
	if len(res.Problems) > 0 {
		msg = append(msg, "the decisions disagree with what the bridge did when recorded:\n  "+strings.Join(res.Problems, "\n  "))
	}
	if len(msg) == 0 {
		return nil
	}
	return fmt.Errorf("%s / %s (%s): %s", r.Kind, r.Scenario, r.Versions.CLI, strings.Join(msg, "\n"))
}
