package claudehook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
)

// lockedBuffer is a bytes.Buffer a hook's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runAfterPrompt starts a later hook of the turn (--after-prompt) and
// returns its result when it ends.
func runAfterPrompt(hook, payload string, env func(string) string, wait time.Duration, stderr *lockedBuffer) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), hook, strings.NewReader(payload), env,
			Options{NoHerdr: true, AfterPrompt: true, PromptWait: wait, Stderr: stderr})
	}()
	return done
}

// typesAndIDs are evs' kinds (a status with its status) and ids.
func typesAndIDs(evs []events.Event) (kinds, ids []string) {
	for _, ev := range evs {
		k := string(ev.Type())
		if s, ok := ev.Data.(events.AgentStatusChanged); ok {
			k += " " + string(s.Status)
		}
		kinds, ids = append(kinds, k), append(ids, ev.ID)
	}
	return kinds, ids
}

var promptThenStop = []string{"fleet.agent.submitted", "fleet.agent.status working", "fleet.agent.replied", "fleet.agent.status idle"}

// A Stop hook run with --after-prompt appends nothing until the prompt's
// UserPromptSubmit hook — which Claude Code runs async, so it may still
// be at work — is done; then its events follow the prompt's, with ids and
// times after theirs though it made them first (the views order an
// agent's statuses by time: a Stop's idle timed before the prompt's
// working left the agent shown working after its turn, and a role's
// router never picked it again).
func TestALaterHookAppendsOnlyAfterThePromptsHook(t *testing.T) {
	f := startFleet(t)
	env := paneEnv(f.url, t.TempDir())
	var stderr lockedBuffer
	stop := runAfterPrompt("stop", payloads[Stop], env, time.Minute, &stderr)
	select {
	case err := <-stop:
		t.Fatalf("the Stop hook ended (%v) before the prompt's hook ran; stderr %q", err, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}
	if evs := f.agentEvents(t); len(evs) != 0 {
		t.Fatalf("the Stop hook appended %d event(s) before the prompt's hook ran", len(evs))
	}
	if out, err := run(t, "user-prompt-submit", payloads[UserPromptSubmit], env); err != nil {
		t.Fatalf("prompt hook: %v %s", err, out)
	}
	select {
	case err := <-stop:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Stop hook did not go on once the prompt's hook was done")
	}
	kinds, ids := typesAndIDs(f.agentEvents(t))
	if !slices.Equal(kinds, promptThenStop) {
		t.Errorf("log: %q, want %q", kinds, promptThenStop)
	}
	if !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(a, b) }) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("ids in log order %q: want each after the one before", ids)
	}
	evs := f.agentEvents(t)
	if !slices.IsSortedFunc(evs, func(a, b events.Event) int { return a.Time.Compare(b.Time) }) {
		for _, ev := range evs {
			t.Logf("%s %s", ev.Type(), ev.Time.Format(time.RFC3339Nano))
		}
		t.Error("times in log order: want none before the one before")
	}
}

// A prompt hook that comes only after its turn's Stop gave up waiting for
// it and ended the turn records the prompt, but no working status: one
// after the Stop's idle would leave the agent working with no turn, in
// the views (by time) and the gateway (by log order) alike.
func TestAPromptHookAfterItsTurnEndedSaysNoWorking(t *testing.T) {
	f := startFleet(t)
	env := paneEnv(f.url, t.TempDir())
	var stderr lockedBuffer
	if err := <-runAfterPrompt("stop", payloads[Stop], env, 50*time.Millisecond, &stderr); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "user-prompt-submit", payloads[UserPromptSubmit], env); err != nil {
		t.Fatalf("prompt hook: %v %s", err, out)
	}
	want := []string{"fleet.agent.replied", "fleet.agent.status idle", "fleet.agent.submitted"}
	if kinds, _ := typesAndIDs(f.agentEvents(t)); !slices.Equal(kinds, want) {
		t.Errorf("log: %q, want %q", kinds, want)
	}
	// A later prompt, whose turn nobody ended, says working as ever.
	next := strings.Replace(payloads[UserPromptSubmit], `"prompt_id":"p2"`, `"prompt_id":"p3"`, 1)
	if out, err := run(t, "user-prompt-submit", next, env); err != nil {
		t.Fatalf("prompt hook: %v %s", err, out)
	}
	if kinds, _ := typesAndIDs(f.agentEvents(t)); !slices.Equal(kinds, append(want, promptThenStop[:2]...)) {
		t.Errorf("log: %q, want %q", kinds, append(want, promptThenStop[:2]...))
	}
}

// With NATS away both hooks spool, and the spool — replayed in id order —
// has the prompt's events first.
func TestALaterHookSpoolsAfterThePromptsHook(t *testing.T) {
	spool := t.TempDir()
	env := paneEnv(deadURL(t), spool)
	var stderr lockedBuffer
	stop := runAfterPrompt("stop", payloads[Stop], env, time.Minute, &stderr)
	time.Sleep(100 * time.Millisecond) // the Stop hook makes its events first
	if out, err := run(t, "user-prompt-submit", payloads[UserPromptSubmit], env); err != nil {
		t.Fatalf("prompt hook: %v %s", err, out)
	}
	if err := <-stop; err != nil {
		t.Fatal(err)
	}
	files, err := pending(filepath.Join(spool, agent))
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	for _, sp := range files {
		b, err := os.ReadFile(sp.path)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.NewRegistry().Decode("", b)
		if err != nil {
			t.Fatalf("%s: %v", sp.path, err)
		}
		evs = append(evs, ev)
	}
	if kinds, _ := typesAndIDs(evs); !slices.Equal(kinds, promptThenStop) {
		t.Errorf("spool in replay order: %q, want %q", kinds, promptThenStop)
	}
}

// A prompt hook that never ran (or died) is waited for no longer than
// PromptWait: the Stop hook then says so and appends.
func TestALaterHookGoesOnWhenThePromptsHookNeverComes(t *testing.T) {
	f := startFleet(t)
	var stderr lockedBuffer
	if err := <-runAfterPrompt("stop", payloads[Stop], paneEnv(f.url, t.TempDir()), 200*time.Millisecond, &stderr); err != nil {
		t.Fatal(err)
	}
	if kinds, _ := typesAndIDs(f.agentEvents(t)); !slices.Equal(kinds, promptThenStop[2:]) {
		t.Errorf("log: %q, want %q", kinds, promptThenStop[2:])
	}
	if !strings.Contains(stderr.String(), "was not done within 200ms") {
		t.Errorf("stderr = %q, want a note that the prompt's hook was not waited for", stderr.String())
	}
}

// idsAfter moves only the ids that do not already come after the last,
// keeping them in order, a carry included.
func TestIDsAfter(t *testing.T) {
	last := ulid.MustNew(1000, bytes.NewReader(bytes.Repeat([]byte{0xff}, 16)))
	earlier, later := ulid.MustNew(999, bytes.NewReader(make([]byte, 16))).String(), ulid.MustNew(2000, bytes.NewReader(make([]byte, 16))).String()
	evs := []events.Event{{ID: earlier}, {ID: last.String()}, {ID: later}}
	idsAfter(evs, last.String())
	if evs[2].ID != later {
		t.Errorf("an id already after the last was moved: %s → %s", later, evs[2].ID)
	}
	if !(last.String() < evs[0].ID && evs[0].ID < evs[1].ID && evs[1].ID < evs[2].ID) {
		t.Errorf("ids %s %s %s after %s: want each after the one before", evs[0].ID, evs[1].ID, evs[2].ID, last)
	}
	if got, _ := ulid.ParseStrict(evs[0].ID); got.Time() != 1001 {
		t.Errorf("an all-ones random part carried into the time to %d, want 1001", got.Time())
	}
	evs = []events.Event{{ID: earlier}}
	idsAfter(evs, "")
	if evs[0].ID != earlier {
		t.Error("with no last id (nothing waited for), an id was moved")
	}
}

// Each prompt has a mark of its own: a prompt submitted while a turn runs
// (its hook done first) does not hide the running turn's mark from that
// turn's Stop.
func TestEachPromptHasItsOwnMark(t *testing.T) {
	f := startFleet(t)
	spool := t.TempDir()
	env := paneEnv(f.url, spool)
	for _, p := range []string{`"prompt_id":"p2"`, `"prompt_id":"p3"`} {
		if out, err := run(t, "user-prompt-submit", strings.Replace(payloads[UserPromptSubmit], `"prompt_id":"p2"`, p, 1), env); err != nil {
			t.Fatalf("prompt hook: %v %s", err, out)
		}
	}
	var stderr lockedBuffer
	if err := <-runAfterPrompt("stop", payloads[Stop], env, 5*time.Second, &stderr); err != nil { // p2's
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "not done") {
		t.Errorf("p2's Stop did not find p2's mark after p3's was made: %q", stderr.String())
	}
	for _, p := range []string{"p2", "p3"} {
		if _, err := os.Stat(filepath.Join(spool, agent, markPrefix+p)); err != nil {
			t.Errorf("%s's mark: %v", p, err)
		}
	}
	if _, ok := markPath(spool, agent, "../x"); ok {
		t.Error("a prompt id with a path in it names a mark")
	}
}

// An agent's marks stay within markLimit: past it the newest half is
// kept, the newest mark among them.
func TestMarksAreTrimmed(t *testing.T) {
	spool := t.TempDir()
	dir := filepath.Join(spool, agent)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	for i := range markLimit {
		p := filepath.Join(dir, fmt.Sprintf("%sold%03d", markPrefix, i))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	markPrompt(spool, agent, "new", "", io.Discard)
	names, _ := filepath.Glob(filepath.Join(dir, markPrefix+"*"))
	if len(names) != markLimit/2 {
		t.Errorf("%d marks after the trim, want %d", len(names), markLimit/2)
	}
	if !slices.Contains(names, filepath.Join(dir, markPrefix+"new")) || !slices.Contains(names, filepath.Join(dir, fmt.Sprintf("%sold%03d", markPrefix, markLimit-1))) {
		t.Errorf("the newest marks were not kept: %v", names)
	}
	if slices.Contains(names, filepath.Join(dir, markPrefix+"old000")) {
		t.Error("the oldest mark was kept")
	}
}
