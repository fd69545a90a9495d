package dashboard_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// openStream opens a dashboard stream and delivers its "view" frames'
// data; stop ends it and waits for its reader.
func openStream(tb testing.TB, u string) (views <-chan string, stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		tb.Fatalf("GET %s: %s", u, res.Status)
	}
	ch := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var event string
		var data []string
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "":
				if event == "view" {
					select {
					case ch <- strings.Join(data, "\n"):
					case <-ctx.Done():
						return
					}
				}
				event, data = "", nil
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return ch, func() { cancel(); <-done }
}

// processCPU is the CPU this process has used, every thread's: what
// bench.ProcessCPU reads. Not imported: package bench links the whole
// fabric (gateway, herdrbridge, fakeapi…) into the dashboard's tests.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitView waits for a view frame that contains want.
func waitView(tb testing.TB, views <-chan string, want string) string {
	tb.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case v, ok := <-views:
			if !ok {
				tb.Fatalf("stream ended waiting for a view with %q", want)
			}
			if strings.Contains(v, want) {
				return v
			}
		case <-timeout:
			tb.Fatalf("no view with %q in time", want)
		}
	}
}

// seedJobs appends n jobs of a few tasks each, with some progress, and
// returns the last job's id.
func seedJobs(tb testing.TB, f *fleettest.Fleet, n int) string {
	tb.Helper()
	var evs []events.Event
	last := ""
	for i := range n {
		last = fmt.Sprintf("job-%03d", i)
		tasks := []events.TaskSpecBrief{{ID: "a", To: "role:w"}, {ID: "b", To: "role:w", Needs: []string{"a"}}, {ID: "c", To: "w-1", Needs: []string{"b"}}}
		evs = append(evs,
			events.Event{Subject: last, Data: events.JobCreated{Goal: "goal of " + last, Tasks: tasks}},
			events.Event{Subject: last, Data: events.JobSliced{Task: "a", Items: []string{"spec", "notes"}, Bytes: 120, Budget: 1000}},
			events.Event{Subject: last, Data: events.JobTask{Task: "a", State: events.TaskSent, Turn: "T" + last, Agent: "w-1"}},
		)
	}
	if _, err := f.Log.AppendMany(fleettest.Ctx(tb), evs); err != nil {
		tb.Fatal(err)
	}
	return last
}

// openStreams is how many live Jobs streams the benchmarks open: a
// team's worth of open dashboards (issue H8, 9).
const openStreams = 30

// BenchmarkIdleJobsStreams measures what open live Jobs streams cost
// while nothing happens: the process's CPU over b.N idle tenths of a
// second (the median tenth), first with no stream open (the fabric's
// own cost: NATS, the fold, the test's host heartbeat), then with
// openStreams open. It reports the difference per stream per second of
// wall time (cpu-µs/stream/s), and both totals (cpu-µs/s-none,
// cpu-µs/s-open).
//
//	go test ./dashboard/ -run '^$' -bench JobsStreams -benchtime 50x
func BenchmarkIdleJobsStreams(b *testing.B) { benchJobsStreams(b, false) }

// BenchmarkBusyJobsStreams is BenchmarkIdleJobsStreams with a job event
// appended every tenth of a second (a running plan's task progress), on
// a job every stream lists: what each change costs the open streams.
func BenchmarkBusyJobsStreams(b *testing.B) { benchJobsStreams(b, true) }

func benchJobsStreams(b *testing.B, busy bool) {
	f := fleettest.New(b)
	last := seedJobs(b, f, 60)
	_, base := serve(b, f, func(c *dashboard.Config) { c.Batch, c.MaxStreams = 250*time.Millisecond, openStreams+1 })
	const step = 100 * time.Millisecond
	states := []string{events.TaskSent, events.TaskReplied}
	rollup := strings.Repeat("a line of the task's reply\n", 80)
	n := 0
	// Each step's CPU is sampled and the median kept: a garbage
	// collection or a fold flush in one step does not weigh on it.
	run := func() time.Duration {
		runtime.GC()
		steps := make([]time.Duration, 0, b.N)
		for range b.N {
			before := processCPU()
			if busy {
				n++
				f.MustAppend(events.Event{Subject: last, Data: events.JobTask{Task: "b", State: states[n%2], Turn: fmt.Sprint("T", n), Agent: "w-1", Rollup: rollup}})
			}
			time.Sleep(step)
			steps = append(steps, processCPU()-before)
		}
		slices.Sort(steps)
		return steps[len(steps)/2]
	}

	b.ResetTimer()
	quiet := run()
	b.StopTimer()
	for i := range openStreams {
		q := "/ui/stream?view=jobs"
		if i%3 == 1 {
			q += "&id=job-000" // a few look at another job: another rendering
		}
		views, stop := openStream(b, base+q)
		b.Cleanup(stop)
		waitView(b, views, `data-job="`+last+`"`)
	}
	b.StartTimer()
	open := run()
	b.StopTimer()

	perSec := func(d time.Duration) float64 { return float64(d.Microseconds()) / step.Seconds() }
	b.ReportMetric(perSec(quiet), "cpu-µs/s-none")
	b.ReportMetric(perSec(open), "cpu-µs/s-open")
	b.ReportMetric(perSec(open-quiet)/openStreams, "cpu-µs/stream/s")
	b.ReportMetric(0, "ns/op")
}
