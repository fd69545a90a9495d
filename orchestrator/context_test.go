package orchestrator_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/orchestrator"
)

// store builds a store; items get Seq in the order given (later = newer).
func store(items ...orchestrator.Item) *orchestrator.Store {
	s := orchestrator.NewStore()
	for i, it := range items {
		it.Seq = uint64(i + 1)
		s.Put(it)
	}
	return s
}

func item(key, text string, tags ...string) orchestrator.Item {
	return orchestrator.Item{Key: key, Text: text, Tags: tags}
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
	tie.Put(orchestrator.Item{Key: "z", Text: "1", Tags: []string{"t"}, Seq: 9})
	tie.Put(orchestrator.Item{Key: "y", Text: "2", Tags: []string{"t"}, Seq: 9})

	for _, tc := range []struct {
		name      string
		s         *orchestrator.Store
		sel       orchestrator.Selector
		budget    int
		want      []string
		truncated []string
		missing   []string
	}{
		{name: "rollups of needs come first in the order given",
			s: s, sel: orchestrator.Selector{Needs: []string{"b", "a"}, Keys: []string{"spec"}}, budget: 100,
			want: []string{"rollup:b", "rollup:a", "spec"}},
		{name: "explicit keys keep their listed order",
			s: s, sel: orchestrator.Selector{Keys: []string{"spec", "old-api"}}, budget: 100,
			want: []string{"spec", "old-api"}},
		{name: "tag matches are newest first",
			s: s, sel: orchestrator.Selector{Tags: []string{"api"}}, budget: 100,
			want: []string{"big-api", "y-api", "z-api", "old-api"}},
		{name: "tag ties are broken by key",
			s: tie, sel: orchestrator.Selector{Tags: []string{"t"}}, budget: 100,
			want: []string{"y", "z"}},
		{name: "an item is taken once at its first place",
			s: s, sel: orchestrator.Selector{Needs: []string{"a"}, Keys: []string{"y-api", "rollup:a"}, Tags: []string{"api", "rollup"}}, budget: 100,
			want: []string{"rollup:a", "y-api", "big-api", "z-api", "old-api", "rollup:b"}},
		{name: "an item that does not fit is skipped and later smaller ones still fit",
			s: s, sel: orchestrator.Selector{Tags: []string{"api"}}, budget: 7,
			want: []string{"y-api", "z-api"}, truncated: []string{"big-api", "old-api"}},
		{name: "budget exactly spent",
			s: s, sel: orchestrator.Selector{Keys: []string{"spec", "rollup:a"}}, budget: 12,
			want: []string{"spec", "rollup:a"}},
		{name: "zero budget truncates everything",
			s: s, sel: orchestrator.Selector{Keys: []string{"spec"}}, budget: 0,
			want: []string{}, truncated: []string{"spec"}},
		{name: "unknown keys and unreplied needs are missing, not fatal",
			s: s, sel: orchestrator.Selector{Needs: []string{"c"}, Keys: []string{"nope", "spec"}}, budget: 100,
			want: []string{"spec"}, missing: []string{"rollup:c", "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sl := orchestrator.Select(tc.s, tc.sel, tc.budget)
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
				again := orchestrator.Select(tc.s, tc.sel, tc.budget)
				if !slices.Equal(again.Keys(), sl.Keys()) || !slices.Equal(again.Truncated, sl.Truncated) {
					t.Fatalf("second select = %v/%v, first %v/%v", again.Keys(), again.Truncated, sl.Keys(), sl.Truncated)
				}
			}
		})
	}
}

func TestStoreLaterItemReplacesEarlierWhateverTheOrder(t *testing.T) {
	s := orchestrator.NewStore()
	s.Put(orchestrator.Item{Key: "k", Text: "new", Seq: 5})
	s.Put(orchestrator.Item{Key: "k", Text: "old", Seq: 2})
	if it, _ := s.Get("k"); it.Text != "new" || it.Size != 3 {
		t.Errorf("k = %+v, want the newer text with its size", it)
	}
}

func TestRenderIsStableAndEscapesAttributes(t *testing.T) {
	sl := orchestrator.Select(store(
		orchestrator.Item{Key: `a"b`, Tags: []string{"x", "y"}, Text: "line 1\nline 2", Provenance: "plan"},
		orchestrator.Item{Key: "c", Text: "c text"},
	), orchestrator.Selector{Keys: []string{`a"b`, "c"}}, 100)
	want := "do it\n\n" +
		"<context key=\"a&#34;b\" tags=\"x,y\" from=\"plan\">\nline 1\nline 2\n</context>\n" +
		"<context key=\"c\">\nc text\n</context>"
	if got := orchestrator.Prompt("do it", sl); got != want {
		t.Errorf("prompt =\n%s\nwant\n%s", got, want)
	}
	if got := orchestrator.Prompt("alone", orchestrator.Slice{}); got != "alone" {
		t.Errorf("prompt without a slice = %q", got)
	}
}

func TestParseSelectors(t *testing.T) {
	sel := orchestrator.ParseSelectors([]string{"spec", "tag:api", " rollup:a ", "", "tag:db"})
	if !slices.Equal(sel.Keys, []string{"spec", "rollup:a"}) || !slices.Equal(sel.Tags, []string{"api", "db"}) {
		t.Errorf("selector = %+v", sel)
	}
}

// SliceFor and RecordSlice are the shim's path for `fleetd send --context
// … --job J`: the slice comes from the job's context in the log and is
// recorded there.
func TestSliceForResolvesAgainstTheJobLogAndRecordSliceRecordsIt(t *testing.T) {
	f := newFleet(t, worker)
	for _, it := range []events.JobContext{
		{Key: "spec", Tags: []string{"design"}, Text: "the spec"},
		{Key: "api", Tags: []string{"api"}, Text: "the api v1"},
		{Key: "api", Tags: []string{"api"}, Text: "the api v2"},
		{Key: "huge", Tags: []string{"api"}, Text: strings.Repeat("h", 64)},
	} {
		if _, err := f.log.Append(f.ctx, events.Event{Subject: "J1", Data: it}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.log.Append(f.ctx, events.Event{Subject: "J2", Data: events.JobContext{Key: "other", Tags: []string{"api"}, Text: "other job"}}); err != nil {
		t.Fatal(err)
	}
	sl, err := orchestrator.SliceFor(f.ctx, f.log, "J1", []string{"spec", "tag:api"}, 30)
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
	ref, err := orchestrator.RecordSlice(f.ctx, f.log, sl)
	if err != nil {
		t.Fatal(err)
	}
	got := f.all("fleet.job.J1.sliced")
	if len(got) != 1 || got[0].ID != ref {
		t.Fatalf("sliced events = %+v, want one with id %s", got, ref)
	}
	d := got[0].Data.(events.JobSliced)
	if !slices.Equal(d.Items, []string{"spec", "api"}) || d.Bytes != sl.Bytes || d.Budget != 30 || d.Agent != "w-1" || d.Task != "delegation-1" ||
		!slices.Equal(d.Truncated, []string{"huge"}) {
		t.Errorf("sliced = %+v", d)
	}
}
