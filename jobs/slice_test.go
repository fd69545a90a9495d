package jobs_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/jobs"
)

// store builds a store; items get Seq in the order given (later = newer).
func store(items ...jobs.Item) *jobs.Store {
	s := jobs.NewStore()
	for i, it := range items {
		it.Seq = uint64(i + 1)
		s.Put(it)
	}
	return s
}

func item(key, text string, tags ...string) jobs.Item {
	return jobs.Item{Key: key, Text: text, Tags: tags}
}

func TestSelectPriorityAndBudget(t *testing.T) {
	s := store(
		item("rollup:b", "bbbb", "rollup"),   // 1
		item("old-api", "aaaa", "api"),       // 2
		item("spec", "ssssssssss", "design"), // 3 (10 bytes)
		item("rollup:a", "aa", "rollup"),     // 4
		item("z-api", "zz", "api"),           // 5
		item("y-api", "yy", "api", "db"),     // 6
		item("big-api", strings.Repeat("x", 50), "api"),
	)
	// y-api and z-api share a Seq to exercise the tie break by key.
	tie := store(item("z", "1", "t"), item("y", "2", "t"))
	tie.Put(jobs.Item{Key: "z", Text: "1", Tags: []string{"t"}, Seq: 9})
	tie.Put(jobs.Item{Key: "y", Text: "2", Tags: []string{"t"}, Seq: 9})

	for _, tc := range []struct {
		name      string
		s         *jobs.Store
		sel       jobs.Selector
		budget    int
		want      []string
		truncated []string
		missing   []string
	}{
		{name: "rollups of needs come first in the order given",
			s: s, sel: jobs.Selector{Needs: []string{"b", "a"}, Keys: []string{"spec"}}, budget: 100,
			want: []string{"rollup:b", "rollup:a", "spec"}},
		{name: "explicit keys keep their listed order",
			s: s, sel: jobs.Selector{Keys: []string{"spec", "old-api"}}, budget: 100,
			want: []string{"spec", "old-api"}},
		{name: "tag matches are newest first",
			s: s, sel: jobs.Selector{Tags: []string{"api"}}, budget: 100,
			want: []string{"big-api", "y-api", "z-api", "old-api"}},
		{name: "tag ties are broken by key",
			s: tie, sel: jobs.Selector{Tags: []string{"t"}}, budget: 100,
			want: []string{"y", "z"}},
		{name: "an item is taken once at its first place",
			s: s, sel: jobs.Selector{Needs: []string{"a"}, Keys: []string{"y-api", "rollup:a"}, Tags: []string{"api", "rollup"}}, budget: 100,
			want: []string{"rollup:a", "y-api", "big-api", "z-api", "old-api", "rollup:b"}},
		{name: "an item that does not fit is skipped and later smaller ones still fit",
			s: s, sel: jobs.Selector{Tags: []string{"api"}}, budget: 7,
			want: []string{"y-api", "z-api"}, truncated: []string{"big-api", "old-api"}},
		{name: "budget exactly spent",
			s: s, sel: jobs.Selector{Keys: []string{"spec", "rollup:a"}}, budget: 12,
			want: []string{"spec", "rollup:a"}},
		{name: "zero budget truncates everything",
			s: s, sel: jobs.Selector{Keys: []string{"spec"}}, budget: 0,
			want: []string{}, truncated: []string{"spec"}},
		{name: "unknown keys and unreplied needs are missing, not fatal",
			s: s, sel: jobs.Selector{Needs: []string{"c"}, Keys: []string{"nope", "spec"}}, budget: 100,
			want: []string{"spec"}, missing: []string{"rollup:c", "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sl := jobs.Select(tc.s, tc.sel, tc.budget)
			if got := sl.Keys(); !slices.Equal(got, tc.want) {
				t.Errorf("items = %v, want %v", got, tc.want)
			}
			if !slices.Equal(sl.Truncated, tc.truncated) {
				t.Errorf("truncated = %v, want %v", sl.Truncated, tc.truncated)
			}
			if !slices.Equal(sl.Missing, tc.missing) {
				t.Errorf("missing = %v, want %v", sl.Missing, tc.missing)
			}
			bytes := 0
			for _, it := range sl.Items {
				bytes += len(it.Text)
			}
			if sl.Bytes != bytes || sl.Bytes > tc.budget {
				t.Errorf("bytes = %d (items hold %d), budget %d", sl.Bytes, bytes, tc.budget)
			}
			// Deterministic: the same inputs give the same slice, every time.
			for range 20 {
				again := jobs.Select(tc.s, tc.sel, tc.budget)
				if !slices.Equal(again.Keys(), sl.Keys()) || !slices.Equal(again.Truncated, sl.Truncated) {
					t.Fatalf("second select = %v/%v, first %v/%v", again.Keys(), again.Truncated, sl.Keys(), sl.Truncated)
				}
			}
		})
	}
}

func TestRenderIsStableAndEscapesAttributes(t *testing.T) {
	sl := jobs.Select(store(
		jobs.Item{Key: `a"b`, Tags: []string{"x", "y"}, Text: "line 1\nline 2", Provenance: "plan"},
		jobs.Item{Key: "c", Text: "c text"},
	), jobs.Selector{Keys: []string{`a"b`, "c"}}, 100)
	want := "do it\n\n" +
		"<context key=\"a&#34;b\" tags=\"x,y\" from=\"plan\">\nline 1\nline 2\n</context>\n" +
		"<context key=\"c\">\nc text\n</context>"
	if got := jobs.Prompt("do it", sl); got != want {
		t.Errorf("prompt =\n%s\nwant\n%s", got, want)
	}
	if got := jobs.Prompt("alone", jobs.Slice{}); got != "alone" {
		t.Errorf("prompt without a slice = %q", got)
	}
}

func TestParseSelectors(t *testing.T) {
	sel := jobs.ParseSelectors([]string{"spec", "tag:api", " rollup:a ", "", "tag:db"})
	if !slices.Equal(sel.Keys, []string{"spec", "rollup:a"}) || !slices.Equal(sel.Tags, []string{"api", "db"}) {
		t.Errorf("selector = %+v", sel)
	}
}

// newLog is a log over a fresh embedded NATS server, for one test.
func newLog(t *testing.T) (context.Context, events.Log) {
	_, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/jobs"})
	return t.Context(), log
}

// SliceFor and RecordSlice are the shim's path for `fleetd send --context
// … --job J`: the slice comes from the job's context in the log and is
// recorded there.
func TestSliceForResolvesAgainstTheJobLogAndRecordSliceRecordsIt(t *testing.T) {
	ctx, log := newLog(t)
	for _, it := range []events.JobContext{
		{Key: "spec", Tags: []string{"design"}, Text: "the spec"},
		{Key: "api", Tags: []string{"api"}, Text: "the api v1"},
		{Key: "api", Tags: []string{"api"}, Text: "the api v2"},
		{Key: "huge", Tags: []string{"api"}, Text: strings.Repeat("h", 64)},
	} {
		if _, err := log.Append(ctx, events.Event{Subject: "J1", Data: it}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Append(ctx, events.Event{Subject: "J2", Data: events.JobContext{Key: "other", Tags: []string{"api"}, Text: "other job"}}); err != nil {
		t.Fatal(err)
	}
	sl, err := jobs.SliceFor(ctx, log, "J1", []string{"spec", "tag:api"}, 30)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sl.Keys(), []string{"spec", "api"}; !slices.Equal(got, want) {
		t.Errorf("slice = %v, want %v", got, want)
	}
	if it := sl.Items[1]; it.Text != "the api v2" {
		t.Errorf("api item = %q, want the latest version", it.Text)
	}
	if !slices.Equal(sl.Truncated, []string{"huge"}) {
		t.Errorf("truncated = %v", sl.Truncated)
	}
	sl.Task, sl.Agent = "delegation-1", "w-1"
	ref, err := jobs.RecordSlice(ctx, log, sl)
	if err != nil {
		t.Fatal(err)
	}
	got := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.job.J1.sliced"}})
	if len(got) != 1 || got[0].ID != ref {
		t.Fatalf("sliced events = %+v, want one with id %s", got, ref)
	}
	d := got[0].Data.(events.JobSliced)
	if !slices.Equal(d.Items, []string{"spec", "api"}) || d.Bytes != sl.Bytes || d.Budget != 30 || d.Agent != "w-1" || d.Task != "delegation-1" ||
		!slices.Equal(d.Truncated, []string{"huge"}) {
		t.Errorf("sliced = %+v", d)
	}
}

// A slice recorded again under the same id (a retry after a crash) is
// stored once.
func TestRecordSliceWithTheSameIDIsStoredOnce(t *testing.T) {
	ctx, log := newLog(t)
	sl := jobs.Slice{Job: "J1", Task: "t", Budget: 10}
	id := events.NewULIDSource(time.Now)()
	for range 2 {
		ref, err := jobs.RecordSlice(ctx, log, sl, jobs.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		if ref != id {
			t.Errorf("ref = %s, want %s", ref, id)
		}
	}
	if got := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.job.J1.sliced"}}); len(got) != 1 {
		t.Errorf("%d sliced events, want 1", len(got))
	}
}

func TestExistsOnlyForAJobWithACreatedEvent(t *testing.T) {
	ctx, log := newLog(t)
	if _, err := log.Append(ctx, events.Event{Subject: "made", Data: events.JobCreated{Goal: "g"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, events.Event{Subject: "context-only", Data: events.JobContext{Key: "k", Text: "t"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job  string
		want bool
	}{{"made", true}, {"context-only", false}, {"never", false}} {
		got, err := jobs.Exists(ctx, log, tc.job)
		if err != nil || got != tc.want {
			t.Errorf("Exists(%s) = %t, %v; want %t", tc.job, got, err, tc.want)
		}
	}
	if _, err := jobs.Exists(ctx, log, "bad job"); err == nil {
		t.Error("Exists of a job name that is no subject token: no error")
	}
}
