package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/turns"
)

// Plan is a job's goal, its tasks and its seed context: the JSON file
// `fleetd orchestrate` reads. The schema is in the package doc.
type Plan struct {
	Goal    string        `json:"goal"`
	Tasks   []Task        `json:"tasks"`
	Context []ContextItem `json:"context,omitempty"`
	// Sessions configure the named sessions tasks address as
	// session:<name>; a session not listed gets the orchestrator's defaults.
	Sessions []SessionSpec `json:"sessions,omitempty"`
	// Budget is the default slice budget in bytes for tasks without one.
	Budget int `json:"budget,omitempty"`
}

// Task is one unit of a plan: instructions for one target, sent once the
// tasks it needs have replied.
type Task struct {
	ID           string `json:"id"`
	To           string `json:"to"`
	Instructions string `json:"instructions,omitempty"`
	// Command, instead of Instructions, types a slash command the target's
	// role allows ("/clear" before a fresh start, "/compact"): no slice
	// goes with it, and its rollup is empty.
	Command string      `json:"command,omitempty"`
	Needs   []string    `json:"needs,omitempty"`
	Context ContextSpec `json:"context,omitzero"`
	Budget  int         `json:"budget,omitempty"`
}

// ContextSpec names the context a task asks for beyond its dependencies'
// rollups.
type ContextSpec struct {
	Keys []string `json:"keys,omitempty"`
	Tags []string `json:"tags,omitempty"`
}

// ContextItem is a seed item of a plan's context store.
type ContextItem struct {
	Key  string   `json:"key"`
	Tags []string `json:"tags,omitempty"`
	Text string   `json:"text"`
}

// Task ids become parts of context keys (rollup:<id>) and job ids of
// sub-plans, so they are tokens.
// Compiled on first use, not as every fleetd process (each hook run) starts.
var taskIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`) })

// ParsePlan decodes and validates a plan file. Unknown fields are errors,
// so a typo in the file does not silently drop a dependency.
func ParsePlan(data []byte) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// ReadPlan reads and parses the plan file at path; a plan it rejects is
// an error that names the file.
func ReadPlan(path string) (Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, err
	}
	p, err := ParsePlan(data)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Validate reports every problem of the plan at once: missing or duplicate
// task ids, bad targets, unknown or cyclic dependencies, negative budgets,
// context items without a key.
func (p Plan) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidPlan}, a...)...))
	}
	if len(p.Tasks) == 0 {
		bad("no tasks")
	}
	if p.Budget < 0 {
		bad("budget %d < 0", p.Budget)
	}
	ids := map[string]bool{}
	for i, t := range p.Tasks {
		switch {
		case !taskIDRE().MatchString(t.ID):
			bad("task %d: id %q must match %s", i, t.ID, taskIDRE())
		case ids[t.ID]:
			bad("task %q: duplicate id", t.ID)
		}
		ids[t.ID] = true
		if _, err := turns.ParseTarget(t.To); err != nil {
			bad("task %q: %v", t.ID, err)
		}
		if t.Budget < 0 {
			bad("task %q: budget %d < 0", t.ID, t.Budget)
		}
		switch {
		case t.Command != "" && t.Instructions != "":
			bad("task %q: give instructions or a command, not both", t.ID)
		case t.Command == "" && strings.TrimSpace(t.Instructions) == "":
			bad("task %q: no instructions (or command)", t.ID)
		case t.Command != "" && (len(t.Context.Keys) > 0 || len(t.Context.Tags) > 0):
			bad("task %q: a command task takes no context", t.ID)
		}
	}
	for _, t := range p.Tasks {
		for _, n := range t.Needs {
			if !ids[n] {
				bad("task %q needs unknown task %q", t.ID, n)
			}
		}
	}
	if cyc := p.cycle(); cyc != nil {
		bad("dependency cycle %s", strings.Join(cyc, " → "))
	}
	keys := map[string]bool{}
	for i, c := range p.Context {
		switch {
		case c.Key == "":
			bad("context item %d has no key", i)
		case keys[c.Key]:
			bad("context key %q given twice", c.Key)
		case strings.HasPrefix(c.Key, jobs.RollupPrefix):
			bad("context key %q: the %s prefix is reserved for rollups", c.Key, jobs.RollupPrefix)
		}
		keys[c.Key] = true
	}
	for _, s := range p.Sessions {
		if err := s.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidPlan, err))
		}
	}
	return errors.Join(errs...)
}

// cycle returns one dependency cycle, or nil.
func (p Plan) cycle() []string {
	needs := map[string][]string{}
	for _, t := range p.Tasks {
		needs[t.ID] = t.Needs
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		color[id] = grey
		stack = append(stack, id)
		for _, n := range needs[id] {
			switch color[n] {
			case grey:
				i := slices.Index(stack, n)
				return append(slices.Clone(stack[i:]), n)
			case white:
				if _, known := needs[n]; known {
					if c := visit(n); c != nil {
						return c
					}
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil
	}
	for _, t := range p.Tasks {
		if color[t.ID] == white {
			if c := visit(t.ID); c != nil {
				return c
			}
		}
	}
	return nil
}

// sinks are the tasks no other task needs, in plan order: their rollups
// make the job's result.
func (p Plan) sinks() []string {
	needed := map[string]bool{}
	for _, t := range p.Tasks {
		for _, n := range t.Needs {
			needed[n] = true
		}
	}
	var out []string
	for _, t := range p.Tasks {
		if !needed[t.ID] {
			out = append(out, t.ID)
		}
	}
	return out
}

// inPlanOrder sorts task ids by their position in the plan.
func (p Plan) inPlanOrder(ids []string) []string {
	pos := map[string]int{}
	for i, t := range p.Tasks {
		pos[t.ID] = i
	}
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b string) int { return pos[a] - pos[b] })
	return out
}

// session returns the plan's spec for a named session, if it has one.
func (p Plan) session(name string) (SessionSpec, bool) {
	i := slices.IndexFunc(p.Sessions, func(s SessionSpec) bool { return s.Name == name })
	if i < 0 {
		return SessionSpec{}, false
	}
	return p.Sessions[i], true
}
