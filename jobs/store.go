package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/fleetd/fleetd/events"
)

// RollupPrefix starts the key of every rollup item: a task's reply is
// stored as rollup:<task>.
const RollupPrefix = "rollup:"

// TagRollup tags every rollup item, so a task can ask for all rollups so
// far with tag:rollup.
const TagRollup = "rollup"

// DefaultBudget is the slice budget in bytes when neither the task nor the
// plan gives one.
const DefaultBudget = 16 << 10

// Item is one entry of a job's context store.
type Item struct {
	// Key names the item in its job; a later item for a key replaces it.
	Key string
	// Tags let a selector take every item carrying one (tag:T).
	Tags []string
	// Text is what a slice renders in the item's <context> block.
	Text string
	// Provenance says where the item came from ("plan", "task:a turn:…").
	Provenance string
	// Size is len(Text) in bytes: what the item costs against a budget.
	Size int
	// Seq is the stream sequence of the item's JobContext event: its
	// recency for tag matches.
	Seq uint64
}

// Store is a job's context store: the fold of its JobContext events, where
// a later event for a key replaces the earlier one. Not safe for
// concurrent use.
type Store struct {
	items map[string]Item
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{items: map[string]Item{}} }

// Put adds or replaces an item; an item older (lower Seq) than the stored
// one for its key is ignored, so replaying the log in any order converges.
func (s *Store) Put(it Item) {
	if old, ok := s.items[it.Key]; ok && old.Seq > it.Seq {
		return
	}
	it.Size = len(it.Text)
	s.items[it.Key] = it
}

// Apply folds a JobContext event; other events are ignored.
func (s *Store) Apply(ev events.Event) bool {
	d, ok := ev.Data.(events.JobContext)
	if !ok {
		return false
	}
	s.Put(Item{Key: d.Key, Tags: d.Tags, Text: d.Text, Provenance: d.Provenance, Seq: ev.Seq})
	return true
}

// Get returns the item for key.
func (s *Store) Get(key string) (Item, bool) {
	it, ok := s.items[key]
	return it, ok
}

// Items lists every item, sorted by key.
func (s *Store) Items() []Item {
	out := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b Item) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// Len is the number of items.
func (s *Store) Len() int { return len(s.items) }

// LoadStore folds a job's context from the log.
func LoadStore(ctx context.Context, log events.Log, job string) (*Store, error) {
	subj, err := events.JobSubject(job, "context")
	if err != nil {
		return nil, err
	}
	s := NewStore()
	for ev, err := range log.Read(ctx, events.Query{Subjects: []string{subj}}) {
		if err != nil {
			return nil, fmt.Errorf("load context of job %s: %w", job, err)
		}
		s.Apply(ev)
	}
	return s, nil
}
