package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
)

// progressLog collects progress lines.
type progressLog struct {
	mu    sync.Mutex
	lines []string
}

func (p *progressLog) add(pr orchestrator.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, pr.Task+":"+pr.State)
}

func (p *progressLog) has(line string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.lines, line)
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

func TestKilledJobResumesWithoutResendingAndReattachesInFlight(t *testing.T) {
	gate := make(chan struct{})
	f := newFleet(t, func(ctx context.Context, agent, role string, turn lifecycle.Turn) string {
		if agent == "w-2" {
			select { // b is still working when the orchestrator dies
			case <-gate:
			case <-ctx.Done():
			}
		}
		return worker(ctx, agent, role, turn)
	})
	plan := orchestrator.Plan{Goal: "g", Tasks: []orchestrator.Task{
		{ID: "a", To: "w-1", Instructions: "task a"},
		{ID: "b", To: "w-2", Instructions: "task b"},
		{ID: "c", To: "w-3", Instructions: "task c", Needs: []string{"a", "b"}},
	}}

	// First run: killed once a replied and b is in flight.
	var first progressLog
	o1 := f.orchestrator(orchestrator.Config{OnProgress: first.add})
	ctx1, kill := context.WithCancel(f.ctx)
	errc := make(chan error, 1)
	go func() { _, err := o1.Run(ctx1, plan, "job2"); errc <- err }()
	checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if !first.has("a:replied") || !first.has("b:sent") {
			return fmt.Errorf("progress %v", first.all())
		}
		return nil
	})
	kill()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run returned %v, want context.Canceled", err)
	}
	if got := f.all("fleet.job.job2.done"); len(got) != 0 {
		t.Fatalf("a killed run recorded done: %+v", got)
	}

	// Second run, same job id: a is not sent again, b is re-attached.
	var second progressLog
	o2 := f.orchestrator(orchestrator.Config{OnProgress: second.add})
	errc2 := make(chan error, 1)
	var res orchestrator.Result
	go func() {
		var err error
		res, err = o2.Run(f.ctx, plan, "job2")
		errc2 <- err
	}()
	checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if !second.has("b:reattached") {
			return fmt.Errorf("progress %v", second.all())
		}
		return nil
	})
	close(gate)
	if err := <-errc2; err != nil {
		t.Fatal(err)
	}
	if got := second.all(); slices.Contains(got, "a:sent") || slices.Contains(got, "b:sent") || !slices.Contains(got, "c:sent") {
		t.Errorf("second run progress = %v: want b re-attached, only c sent", got)
	}
	if got, want := f.queuedByTask("job2"), map[string]int{"a": 1, "b": 1, "c": 1}; !mapsEqual(got, want) {
		t.Errorf("queued per task = %v, want %v", got, want)
	}
	if want := "done: task c"; res.Rollup != want {
		t.Errorf("rollup = %q, want %q", res.Rollup, want)
	}
	if res.Rollups["b"] != "done: task b" || res.Rollups["a"] != "done: task a" {
		t.Errorf("rollups = %v", res.Rollups)
	}

	// A third run of the finished job sends nothing and returns the result.
	res3, err := f.orchestrator(orchestrator.Config{}).Run(f.ctx, plan, "job2")
	if err != nil || res3.Rollup != res.Rollup {
		t.Errorf("rerun of a done job = %q, %v", res3.Rollup, err)
	}
	if got := f.queuedByTask("job2"); got["c"] != 1 {
		t.Errorf("rerun of a done job queued again: %v", got)
	}
}

// failingSender records nothing in the log: the crash window between the
// write-ahead "sent" record and the queued event.
type failingSender struct{}

func (failingSender) Send(context.Context, orchestrator.Message) (string, error) {
	return "", errors.New("connection lost")
}

func (failingSender) Wait(context.Context, string) (lifecycle.Turn, error) {
	return lifecycle.Turn{}, errors.New("connection lost")
}

func TestTaskRecordedSentButNeverQueuedIsQueuedOnceUnderItsTurnID(t *testing.T) {
	f := newFleet(t, worker)
	plan := orchestrator.Plan{Goal: "g", Tasks: []orchestrator.Task{{ID: "only", To: "w-1", Instructions: "hello"}}}
	if _, err := f.orchestrator(orchestrator.Config{Sender: failingSender{}}).Run(f.ctx, plan, "job3"); err == nil {
		t.Fatal("run with a failing sender succeeded")
	}
	var sent string
	for _, ev := range f.all("fleet.job.job3.task") {
		if d := ev.Data.(events.JobTask); d.State == events.TaskSent {
			sent = d.Turn
		}
	}
	if sent == "" {
		t.Fatal("no sent record with a turn id")
	}
	res, err := f.orchestrator(orchestrator.Config{}).Resume(f.ctx, "job3")
	if err != nil {
		t.Fatal(err)
	}
	if res.Rollup != "done: hello" {
		t.Errorf("rollup = %q", res.Rollup)
	}
	q := f.all("fleet.agent.w-1.queued")
	if len(q) != 1 || q[0].ID != sent || q[0].CorrelationID != sent {
		t.Errorf("queued = %+v, want one turn with id %s", q, sent)
	}
	done := f.all("fleet.job.job3.done")
	if len(done) != 2 || done[0].Data.(events.JobDone).Status != "failed" || done[1].Data.(events.JobDone).Status != "ok" {
		t.Errorf("done events = %+v, want failed then ok", done)
	}
}

func TestFailedTaskFailsTheJobAndSkipsItsDependents(t *testing.T) {
	f := newFleet(t, worker)
	// w-gone never gets a reply: fail its turn as a gateway would.
	plan := orchestrator.Plan{Goal: "g", Tasks: []orchestrator.Task{
		{ID: "a", To: "w-1", Instructions: "fine"},
		{ID: "x", To: "w-9", Instructions: "doomed"},
		{ID: "y", To: "w-1", Instructions: "after x", Needs: []string{"x"}},
	}}
	f.driver.mu.Lock()
	f.driver.exited["w-9"] = true
	f.driver.mu.Unlock()
	queued := followQueued(t, f, "w-9")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range queued.Events() {
			_, _ = f.log.Append(f.ctx, events.Event{Subject: "w-9", CorrelationID: ev.ID, Data: events.AgentFailed{Reason: events.ReasonPaneExited, Message: "gone"}})
		}
	}()
	t.Cleanup(func() { queued.Stop(); wg.Wait() })
	_, err := f.orchestrator(orchestrator.Config{}).Run(f.ctx, plan, "job4")
	if !errors.Is(err, orchestrator.ErrTaskFailed) || !strings.Contains(err.Error(), "pane_exited") {
		t.Fatalf("err = %v, want the failed task", err)
	}
	if got := f.queuedByTask("job4"); got["y"] != 0 {
		t.Errorf("dependent of a failed task was sent: %v", got)
	}
	done := f.all("fleet.job.job4.done")
	if len(done) != 1 || done[0].Data.(events.JobDone).Status != "failed" {
		t.Errorf("done = %+v", done)
	}
}

// followQueued follows the queued events of one agent.
func followQueued(t *testing.T, f *fleet, agent string) *events.Follower {
	fl, err := f.log.Follow(f.ctx, events.Query{Subjects: []string{"fleet.agent." + agent + ".queued"}})
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
