package dashboard_test

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// nextView is the very next view frame of a stream.
func nextView(t *testing.T, views <-chan string) string {
	t.Helper()
	select {
	case v, ok := <-views:
		if !ok {
			t.Fatal("the stream ended")
		}
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("no view in time")
	}
	return ""
}

// Live Jobs streams share one board: a job event is rendered once for
// each distinct view open, not once a stream, and reaches every stream
// whose view it changed, once, and no other (issue H8, 9).
func TestAJobEventReachesEveryJobsStreamOnce(t *testing.T) {
	f := fleettest.New(t)
	newest := seedJobs(t, f, 3) // job-002; job-000 is the oldest
	d, base := serve(t, f, nil)

	// Seven streams show the newest job, three job-000.
	var newestViews, oldViews []<-chan string
	for i := range 10 {
		q, want := "/ui/stream?view=jobs", `id="job-`+newest+`"`
		if i%3 == 1 {
			q, want = q+"&id=job-000", `id="job-job-000"`
		}
		views, stop := openStream(t, base+q)
		t.Cleanup(stop)
		waitView(t, views, want)
		if i%3 == 1 {
			oldViews = append(oldViews, views)
		} else {
			newestViews = append(newestViews, views)
		}
	}
	jb := dashboard.JobBoardOf(d)
	if jb.Streams != 10 || jb.Views != 2 || jb.Renders != 2 {
		t.Fatalf("board with 10 streams open: %+v, want 10 streams of 2 views, each rendered once", jb)
	}
	all := append(append([]<-chan string{}, newestViews...), oldViews...)

	// Both views list every job's status.
	f.MustAppend(events.Event{Subject: newest, Data: events.JobDone{Status: "ok"}})
	for i, views := range all {
		if v := nextView(t, views); !strings.Contains(v, `<tr data-job="`+newest+`"`) || strings.Count(v, `j-done`) == 0 {
			t.Fatalf("stream %d: the next view does not show %s done: %s", i, newest, v)
		}
	}
	if got := dashboard.JobBoardOf(d).Renders - jb.Renders; got != 2 {
		t.Errorf("one job event for 10 streams of 2 views: %d renderings, want 2", got)
	}

	// Only job-000's own view shows its tasks' states: the other streams
	// are not sent anything.
	f.MustAppend(events.Event{Subject: "job-000", Data: events.JobTask{Task: "c", State: events.TaskSent, Turn: "Tc", Agent: "w-1"}})
	for i, views := range oldViews {
		if v := nextView(t, views); !strings.Contains(v, `id="task-c" data-task="c" data-state="sent"`) {
			t.Fatalf("job-000's stream %d: the next view does not show task c sent: %s", i, v)
		}
	}
	// A new job is listed by both views; the streams of the newest job's
	// view get it next, nothing in between.
	f.MustAppend(events.Event{Subject: "job-new", Data: events.JobCreated{Goal: "a new one", Tasks: []events.TaskSpecBrief{{ID: "a", To: "w-1"}}}})
	for i, views := range all {
		if v := nextView(t, views); !strings.Contains(v, `data-job="job-new"`) {
			t.Fatalf("stream %d: the next view does not list job-new: %s", i, v)
		}
	}
	if got := dashboard.JobBoardOf(d).Renders - jb.Renders; got != 6 {
		t.Errorf("three job events for 10 streams of 2 views: %d renderings, want 6", got)
	}
}

// liveJobsGoroutines counts the goroutines serving live Jobs streams
// and running their board.
func liveJobsGoroutines() int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for g := range strings.SplitSeq(b.String(), "\n\n") {
		if strings.Contains(g, "dashboard.(*jobHub)") || strings.Contains(g, "dashboard.(*Server).liveJobs") {
			n++
		}
	}
	return n
}

// Streams that go away leave the board; the last takes the board, its
// follower and every goroutine of theirs with it, and a new stream
// starts a new board.
func TestJobsStreamsThatGoAwayAreCleanedUp(t *testing.T) {
	f := fleettest.New(t)
	newest := seedJobs(t, f, 2)
	d, base := serve(t, f, nil)
	board := func(want dashboard.JobBoard) {
		t.Helper()
		checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
			if got := dashboard.JobBoardOf(d); got.Open != want.Open || got.Streams != want.Streams || got.Views != want.Views {
				return fmt.Errorf("board %+v, want %+v", got, want)
			}
			return nil
		})
	}

	var stops []func()
	for i := range 4 {
		q := "/ui/stream?view=jobs"
		if i == 3 {
			q += "&id=job-000"
		}
		views, stop := openStream(t, base+q)
		stops = append(stops, stop)
		waitView(t, views, `data-job="`+newest+`"`)
	}
	board(dashboard.JobBoard{Open: true, Streams: 4, Views: 2})
	stops[3]()
	board(dashboard.JobBoard{Open: true, Streams: 3, Views: 1})
	for _, stop := range stops[:3] {
		stop()
	}
	board(dashboard.JobBoard{})
	checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if n := liveJobsGoroutines(); n != 0 {
			return fmt.Errorf("%d goroutines of live Jobs streams left", n)
		}
		if n := d.Stats().Streams; n != 0 {
			return fmt.Errorf("%d streams still open", n)
		}
		return nil
	})

	views, stop := openStream(t, base+"/ui/stream?view=jobs")
	defer stop()
	waitView(t, views, `data-job="`+newest+`"`)
	f.MustAppend(events.Event{Subject: newest, Data: events.JobDone{Status: "ok"}})
	waitView(t, views, `j-done`)
	board(dashboard.JobBoard{Open: true, Streams: 1, Views: 1})
}
