package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/recording"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/projections"
)

// recordMode turns on the recording tests (TestRecord…): "compare"
// re-records each kind's standard scenarios with the CLI installed now
// and prints what changed against the recordings in testdata; "write"
// does the same and rewrites them. Recording needs the real CLIs and
// takes minutes, so it never runs in a plain `go test ./...`; the
// replay of what it wrote does (herdrbridge/recording).
//
//	go test ./cmd/fleetd -run TestRecordClaude -count=1 -timeout 20m -args -record=compare
var recordMode = flag.String("record", "", "re-record the agent CLIs' standard scenarios: compare (print the diff) or write (rewrite testdata)")

// recordingsDir is where the recordings live, from this package.
const recordingsDir = "../../herdrbridge/recording/testdata"

// recorder records one fleet's session of one agent, scenario by
// scenario, through a proxy on herdr's socket.
type recorder struct {
	t        *testing.T
	kind     herdrbridge.Kind
	agent    string
	versions recording.Versions
	proxy    *recording.Proxy
	log      events.Log
	scrub    *recording.Scrubber
	person   *herdrapi.Client
	began    time.Time
	recs     []*recording.Recording
	// history is the wire before the scenario at hand: herdr's words
	// about the agent's pane there say what the bridge knew of it when
	// the scenario began (recording.Before).
	history []recording.Wire
}

// requireRecordMode skips a recording test unless -record was given.
func requireRecordMode(t *testing.T) {
	t.Helper()
	switch *recordMode {
	case "compare", "write":
	case "":
		t.Skip("re-recording runs only on demand: go test ./cmd/fleetd -run TestRecord -args -record=compare (or =write)")
	default:
		t.Fatalf("-record=%q: want compare or write", *recordMode)
	}
}

// cliVersion is the first line of `bin --version` (on stdout, or on
// stderr where Pi writes it).
func cliVersion(t *testing.T, bin string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

// begin starts a scenario: what the proxy kept before goes to history,
// from which the scenario's steps at time 0 are told (end).
func (r *recorder) begin(scenario string) {
	r.history = append(r.history, r.proxy.Take()...)
	r.began = time.Now()
	r.t.Logf("recording %s / %s", r.kind.Name(), scenario)
}

// note records the scenario's own action on pane (as a person would).
func (r *recorder) note(pane, what string) { r.proxy.Note(pane, what) }

// look reads pane's screen through the proxy, as the bridge does, so that
// the recording holds the screen of a moment the bridge has no reason to
// look at (the agent started, blocked on a permission prompt, killed),
// and the replay decides on it too.
func (r *recorder) look(ctx context.Context, pane, why string) {
	r.t.Helper()
	r.note(pane, "the recorder looks: "+why)
	if _, err := herdrapi.New(r.proxy.Path()).Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible}); err != nil {
		r.t.Logf("look at %s: %v", pane, err)
	}
}

// screenReady waits until pane's screen, read past the proxy (not
// recorded), shows the kind ready for a prompt: a scenario ends where
// the next begins, not inside the end of a turn.
func (r *recorder) screenReady(ctx context.Context, pane string) {
	r.t.Helper()
	r.screenSays(ctx, pane, herdrbridge.ScreenReady)
}

// screenSays waits until pane's screen, read past the proxy, says want
// (herdrbridge.ScreenReadiness): what a person did shows before the
// bridge is given a turn to decide on.
func (r *recorder) screenSays(ctx context.Context, pane, want string) {
	r.t.Helper()
	r.screenSaysWithin(ctx, pane, want, 30*time.Second)
}

// screenSaysOther waits until pane's screen, read past the proxy, says
// anything but not, and returns what it says.
func (r *recorder) screenSaysOther(ctx context.Context, pane, not string) string {
	r.t.Helper()
	var v string
	checkfor.Eventually(r.t, 30*time.Second, 50*time.Millisecond, func() error {
		got, err := r.person.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return err
		}
		now := herdrbridge.ScreenReadiness(r.kind, got.Text)
		if now == not {
			v = ""
			return fmt.Errorf("the screen still says %s:\n%s", now, got.Text)
		}
		// The same on two looks apart: a dialog that opens a moment
		// after the keys, not the keys half taken.
		if now != v {
			v = now
			time.Sleep(time.Second)
			return fmt.Errorf("the screen says %s: once more", now)
		}
		return nil
	})
	return v
}

// screenSaysWithin is screenSays with a limit of its own (a CLI starting).
func (r *recorder) screenSaysWithin(ctx context.Context, pane, want string, limit time.Duration) {
	r.t.Helper()
	checkfor.Eventually(r.t, limit, 50*time.Millisecond, func() error {
		got, err := r.person.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return err
		}
		if v := herdrbridge.ScreenReadiness(r.kind, got.Text); v != want {
			return fmt.Errorf("the screen says %s, want %s:\n%s", v, want, got.Text)
		}
		return nil
	})
}

// end builds the scenario's recording from the proxy's wire and the
// agent's log events since begin, after the steps at time 0 that say
// what the bridge had been told of the agent's statuses before it (from
// the wire and the log events before begin).
func (r *recorder) end(ctx context.Context, scenario string) {
	r.t.Helper()
	wire := r.proxy.Take()
	var earlier, logs []recording.LogEvent
	for ev, err := range r.log.Read(ctx, events.Query{Subjects: []string{"fleet.agent." + r.agent + ".>"}}) {
		if err != nil {
			r.t.Fatal(err)
		}
		if ev.Data == nil {
			continue
		}
		raw, err := json.Marshal(ev.Data)
		if err != nil {
			r.t.Fatal(err)
		}
		e := recording.LogEvent{Time: ev.Time, Type: strings.TrimPrefix(string(ev.Type()), "fleet.agent."), Turn: ev.CorrelationID, Data: raw}
		if ev.Time.Before(r.began) {
			earlier = append(earlier, e)
		} else {
			logs = append(logs, e)
		}
	}
	before := recording.Before(r.history, earlier, r.scrub)
	rec := recording.Build(r.kind.Name(), scenario, r.versions, wire, logs, r.scrub)
	rec.Steps = append(before, rec.Steps...)
	r.history = append(r.history, wire...)
	res := recording.Replay(r.kind, rec)
	rec.Decisions = res.Decisions
	for _, p := range res.Problems {
		r.t.Errorf("%s: %s", scenario, p)
	}
	r.recs = append(r.recs, rec)
}

// finish compares each scenario's new recording with the one in testdata
// (the same CLI version's, else the newest other version's) and prints
// the diff; with -record=write it saves them.
func (r *recorder) finish() {
	r.t.Helper()
	for _, rec := range r.recs {
		path := recording.Path(recordingsDir, rec.Kind, rec.Versions.CLI, rec.Scenario)
		old := previous(rec.Kind, rec.Scenario, path)
		now := recording.Summary(r.kind, rec)
		switch {
		case old == nil:
			r.t.Logf("%s / %s: new recording (%d steps, %d screens)\n%s", rec.Kind, rec.Scenario, len(rec.Steps), len(rec.Screens), strings.Join(now, "\n"))
		default:
			if d := recording.Diff(recording.Summary(r.kind, old), now, 3); d != "" {
				r.t.Logf("%s / %s: changed since the recording of %s (- then, + now):\n%s", rec.Kind, rec.Scenario, old.Versions.CLI, d)
			} else {
				r.t.Logf("%s / %s: unchanged", rec.Kind, rec.Scenario)
			}
		}
		if *recordMode == "write" {
			if err := recording.Save(path, rec); err != nil {
				r.t.Fatal(err)
			}
			r.t.Logf("wrote %s", path)
		}
	}
}

// previous is the recording of kind's scenario to compare with: the one at
// path, else the newest other version's.
func previous(kind, scenario, path string) *recording.Recording {
	if rec, err := recording.Load(path); err == nil {
		return rec
	}
	files, _ := filepath.Glob(filepath.Join(recordingsDir, kind, "*", scenario+".json.gz"))
	slices.Sort(files)
	for i := len(files) - 1; i >= 0; i-- {
		if rec, err := recording.Load(files[i]); err == nil {
			return rec
		}
	}
	return nil
}

// agentRow waits until the roster's row of the agent satisfies ok.
func agentRow(t *testing.T, roster func(context.Context) ([]projections.Agent, error), ctx context.Context, agent string, limit time.Duration, what string, ok func(projections.Agent) bool) projections.Agent {
	t.Helper()
	var row projections.Agent
	checkfor.Eventually(t, limit, 100*time.Millisecond, func() error {
		rows, err := roster(ctx)
		if err != nil {
			return err
		}
		a, found := findAgent(rows, agent)
		if !found || !ok(a) {
			return fmt.Errorf("%s is not %s yet: %+v", agent, what, a)
		}
		row = a
		return nil
	})
	return row
}
