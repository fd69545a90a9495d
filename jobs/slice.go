package jobs

import (
	"cmp"
	"context"
	"fmt"
	"html"
	"slices"
	"strings"

	"github.com/fleetd/fleetd/events"
)

// Selector is what a slice asks for.
type Selector struct {
	// Needs are task ids whose rollups come first, in this order.
	Needs []string
	// Keys are explicit item keys, in this order.
	Keys []string
	// Tags select every item carrying any of them.
	Tags []string
}

// ParseSelectors reads the selector strings of a message's context field:
// "tag:T" selects by tag, anything else is an explicit key (a rollup is
// the key rollup:<task>).
func ParseSelectors(sel []string) Selector {
	var s Selector
	for _, x := range sel {
		x = strings.TrimSpace(x)
		switch {
		case x == "":
		case strings.HasPrefix(x, "tag:"):
			s.Tags = append(s.Tags, strings.TrimPrefix(x, "tag:"))
		default:
			s.Keys = append(s.Keys, x)
		}
	}
	return s
}

// Strings is the selector in the message context form ParseSelectors reads.
func (s Selector) Strings() []string {
	var out []string
	for _, n := range s.Needs {
		out = append(out, RollupPrefix+n)
	}
	out = append(out, s.Keys...)
	for _, t := range s.Tags {
		out = append(out, "tag:"+t)
	}
	return out
}

// Slice is the context handed to one task: whole items in priority order
// within a byte budget.
type Slice struct {
	// Job is the job whose store the slice was cut from.
	Job string
	// Task, Session and Agent say who the slice is for (a plan's task,
	// the session and the agent serving it, or a delegation's agent); the
	// JobSliced record carries them.
	Task    string
	Session string
	Agent   string
	// Items are the selected items, whole, in priority order.
	Items []Item
	// Bytes is the sum of the items' sizes; Budget the limit it kept to.
	Bytes  int
	Budget int
	// Truncated are keys selected but left out because they did not fit.
	Truncated []string
	// Missing are needed or explicit keys the store does not hold.
	Missing []string
}

// Keys are the slice's item keys in order.
func (sl Slice) Keys() []string {
	out := make([]string, len(sl.Items))
	for i, it := range sl.Items {
		out[i] = it.Key
	}
	return out
}

// Select picks a slice from the store. The priority, fixed and
// deterministic (same store, selector and budget → same slice):
//
//  1. rollups of the needed tasks (rollup:<task>), in the order given;
//  2. explicit keys, in the order given;
//  3. items carrying any selected tag, newest first (higher Seq), ties
//     by key.
//
// An item selected twice counts once, at its first place. Items are taken
// whole, greedily in that order: one that does not fit in what is left
// of the budget is skipped and listed in Truncated, and later, smaller
// items may still fit.
func Select(s *Store, sel Selector, budget int) Slice {
	sl := Slice{Budget: budget}
	seen := map[string]bool{}
	var order []Item
	want := func(key string) {
		if seen[key] {
			return
		}
		seen[key] = true
		if it, ok := s.Get(key); ok {
			order = append(order, it)
		} else {
			sl.Missing = append(sl.Missing, key)
		}
	}
	for _, n := range sel.Needs {
		want(RollupPrefix + n)
	}
	for _, k := range sel.Keys {
		want(k)
	}
	if len(sel.Tags) > 0 {
		var tagged []Item
		for _, it := range s.items {
			if !seen[it.Key] && hasAny(it.Tags, sel.Tags) {
				tagged = append(tagged, it)
			}
		}
		slices.SortFunc(tagged, func(a, b Item) int {
			if c := cmp.Compare(b.Seq, a.Seq); c != 0 {
				return c
			}
			return cmp.Compare(a.Key, b.Key)
		})
		order = append(order, tagged...)
	}
	for _, it := range order {
		if sl.Bytes+it.Size > budget {
			sl.Truncated = append(sl.Truncated, it.Key)
			continue
		}
		sl.Items = append(sl.Items, it)
		sl.Bytes += it.Size
	}
	return sl
}

func hasAny(have, want []string) bool {
	for _, w := range want {
		if slices.Contains(have, w) {
			return true
		}
	}
	return false
}

// Render writes the slice in its stable prompt form, one block per item in
// slice order:
//
//	<context key="KEY" tags="T1,T2" from="PROVENANCE">
//	TEXT
//	</context>
//
// Attribute values are HTML-escaped; the text is written as is. An empty
// slice renders as "".
func (sl Slice) Render() string {
	var b strings.Builder
	for i, it := range sl.Items {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "<context key=\"%s\"", html.EscapeString(it.Key))
		if len(it.Tags) > 0 {
			fmt.Fprintf(&b, " tags=\"%s\"", html.EscapeString(strings.Join(it.Tags, ",")))
		}
		if it.Provenance != "" {
			fmt.Fprintf(&b, " from=\"%s\"", html.EscapeString(it.Provenance))
		}
		b.WriteString(">\n")
		b.WriteString(it.Text)
		b.WriteString("\n</context>")
	}
	return b.String()
}

// Prompt is what a task's target is sent: the instructions, then a blank
// line and the rendered slice when it has items.
func Prompt(instructions string, sl Slice) string {
	r := sl.Render()
	if r == "" {
		return instructions
	}
	return instructions + "\n\n" + r
}

// SliceFor resolves a message's context selectors (keys, tag:T) against a
// job's context store within budget (≤0: DefaultBudget). The shim and
// `fleetd send --job` call it, then RecordSlice, so a delegation from a
// main carries exactly the recorded slice.
func SliceFor(ctx context.Context, log events.Log, job string, selectors []string, budget int) (Slice, error) {
	s, err := LoadStore(ctx, log, job)
	if err != nil {
		return Slice{}, err
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	sl := Select(s, ParseSelectors(selectors), budget)
	sl.Job = job
	return sl, nil
}

// RecordSlice appends the slice as a JobSliced event on its job and returns
// the event id: the slice reference a turn carries (AgentQueued.SliceRef),
// so any agent's view can be reconstructed from the log.
func RecordSlice(ctx context.Context, log events.Log, sl Slice, opts ...RecordOption) (string, error) {
	var o recordOptions
	for _, opt := range opts {
		opt(&o)
	}
	ack, err := log.Append(ctx, events.Event{ID: o.id, Subject: sl.Job, CorrelationID: sl.Job, Data: events.JobSliced{
		Task: sl.Task, Session: sl.Session, Agent: sl.Agent, Items: sl.Keys(),
		Bytes: sl.Bytes, Budget: sl.Budget, Truncated: sl.Truncated,
	}})
	if err != nil {
		return "", fmt.Errorf("record slice of job %s task %s: %w", sl.Job, sl.Task, err)
	}
	return ack.ID, nil
}

// RecordOption is a per-call knob of RecordSlice.
type RecordOption func(*recordOptions)

type recordOptions struct {
	id string
}

// WithID makes RecordSlice append under id instead of a new ULID, so a
// caller that may record the same slice again after a crash (the
// orchestrator, with an id derived from the turn) stores it once:
// JetStream's dedupe makes the retry a no-op.
func WithID(id string) RecordOption {
	return func(o *recordOptions) { o.id = id }
}

// Exists reports whether job has a created event in the log: a send that
// names a job with none is refused before anything is sliced or queued.
func Exists(ctx context.Context, log events.Log, job string) (bool, error) {
	subj, err := events.JobSubject(job, "created")
	if err != nil {
		return false, err
	}
	seq, err := log.LastSeq(ctx, subj)
	if err != nil {
		return false, fmt.Errorf("look job %s up: %w", job, err)
	}
	return seq > 0, nil
}
