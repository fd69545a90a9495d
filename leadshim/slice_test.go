package leadshim_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/leadshim"
)

// A send naming a job delegates a slice: its selectors are resolved
// against the job's context store, the slice is recorded, the prompt the
// agent gets is the text plus exactly that slice, and the turn carries
// the job and the slice reference.
func TestSendWithAJobDelegatesARecordedSlice(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.RunAgents(10 * time.Millisecond)
	_, base := newShim(t, f, nil)

	f.MustAppend(events.Event{Subject: "j1", Data: events.JobCreated{Goal: "g"}})
	for _, it := range []events.JobContext{
		{Key: "spec", Tags: []string{"api"}, Text: "the spec"},
		{Key: "notes", Tags: []string{"api"}, Text: "api notes"},
		{Key: "other", Tags: []string{"ui"}, Text: "not for you"},
	} {
		f.MustAppend(events.Event{Subject: "j1", Data: it})
	}

	status, body := post(t, base, `{"to":"w1","text":"build it","job":"j1","context":["spec","tag:api"],"timeout":"20s"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	env := mustJSON[leadshim.Envelope](t, body)
	q := eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w1.queued"}})
	if len(q) != 1 {
		t.Fatalf("%d queued events", len(q))
	}
	turn := q[0].Data.(events.AgentQueued)
	sliced := eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.job.j1.sliced"}})
	if len(sliced) != 1 {
		t.Fatalf("%d sliced events, want 1", len(sliced))
	}
	sl := sliced[0].Data.(events.JobSliced)
	if !slices.Equal(sl.Items, []string{"spec", "notes"}) || sl.Agent != "w1" || turn.SliceRef != sliced[0].ID || turn.Job != "j1" {
		t.Errorf("sliced %+v (id %s); turn job %q slice ref %q", sl, sliced[0].ID, turn.Job, turn.SliceRef)
	}
	want := jobs.Prompt("build it", jobs.Slice{Items: []jobs.Item{
		{Key: "spec", Tags: []string{"api"}, Text: "the spec"}, {Key: "notes", Tags: []string{"api"}, Text: "api notes"}}})
	if turn.Text != want {
		t.Errorf("prompt = %q, want %q", turn.Text, want)
	}
	if env.Reply != fleettest.Reply(want) {
		t.Errorf("reply %q: the agent did not get the sliced prompt", env.Reply)
	}
	if !slices.Equal(turn.Context, []string{"spec", "tag:api"}) {
		t.Errorf("context = %v, want the selectors", turn.Context)
	}

	// Refusals, before anything is queued or sliced.
	for _, c := range []struct {
		body string
		code int
		err  string
	}{
		{`{"to":"w1","text":"x","job":"nope","context":["spec"]}`, http.StatusNotFound, "unknown_job"},
		{`{"to":"w1","text":"x","job":"j1","context":["spec","typo"]}`, http.StatusBadRequest, "missing_context"},
		{`{"to":"w1","text":"x","job":"bad job"}`, http.StatusBadRequest, "bad_job"},
	} {
		status, body := post(t, base, c.body)
		if status != c.code || errorOf(t, body).Code != c.err {
			t.Errorf("%s: %d %s, want %d %s", c.body, status, body, c.code, c.err)
		}
	}
	if n := len(eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w1.queued"}})); n != 1 {
		t.Errorf("%d turns queued, want only the first", n)
	}
	if n := len(eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.job.j1.sliced"}})); n != 1 {
		t.Errorf("%d slices recorded, want only the first", n)
	}
}
