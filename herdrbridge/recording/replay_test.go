package recording_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/recording"
)

// updateDecisions rewrites each recording's decisions with what the
// replay says now: for when the replay itself learns to say more (a new
// decision of the bridge joins it), never to accept what a kind's
// change did to recorded screens — that is re-recorded and reviewed
// (README). go test ./herdrbridge/recording -run TestRecordingsReplay -args -update-decisions
var updateDecisions = flag.Bool("update-decisions", false, "rewrite the recordings' decisions with the replay's")

// Every recording in testdata replays through the kind's decision code to
// the decisions it was recorded with, and they agree with what the bridge
// did then. No CLI is needed: this is the regression test a CLI update is
// caught by (re-record, read the diff; see the package doc).
func TestRecordingsReplayToTheirDecisions(t *testing.T) {
	files, err := recording.All("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recordings in testdata")
	}
	for _, path := range files {
		rel, _ := filepath.Rel("testdata", path)
		t.Run(rel, func(t *testing.T) {
			rec, err := recording.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			k, err := herdrbridge.KindOf(rec.Kind)
			if err != nil {
				t.Fatal(err)
			}
			if *updateDecisions {
				res := recording.Replay(k, rec)
				if len(res.Problems) > 0 {
					t.Fatalf("not rewritten, the replay finds problems: %v", res.Problems)
				}
				rec.Decisions = res.Decisions
				if err := recording.Save(path, rec); err != nil {
					t.Fatal(err)
				}
			}
			if len(rec.Decisions) == 0 {
				t.Fatalf("%s has no decisions", rel)
			}
			if err := recording.Check(k, rec); err != nil {
				t.Error(err)
			}
		})
	}
}

// A recording is where it says it is: testdata/<kind>/<cli version>/<scenario>.json.gz.
func TestRecordingsAreFiledByKindVersionAndScenario(t *testing.T) {
	files, _ := recording.All("testdata")
	for _, path := range files {
		rec, err := recording.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := recording.Path("testdata", rec.Kind, rec.Versions.CLI, rec.Scenario); path != want {
			t.Errorf("%s holds %s / %s of %s: want it at %s", path, rec.Kind, rec.Scenario, rec.Versions.CLI, want)
		}
	}
}

// loadScenario loads the recording of kind's scenario (its only version,
// or the last).
func loadScenario(t *testing.T, kind, scenario string) *recording.Recording {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", kind, "*", scenario+".json.gz"))
	if len(files) == 0 {
		t.Fatalf("no recording of %s / %s", kind, scenario)
	}
	rec, err := recording.Load(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// lastReadBefore is the index in rec.Steps of the last read of a screen
// before the first step of op.
func lastReadBefore(t *testing.T, rec *recording.Recording, op string) int {
	t.Helper()
	last := -1
	for i, st := range rec.Steps {
		if st.Op == op {
			if last < 0 {
				t.Fatalf("no read before the first %s", op)
			}
			return last
		}
		if st.Op == recording.OpRead {
			last = i
		}
	}
	t.Fatalf("no %s step", op)
	return -1
}

// A CLI that drew its prompt character differently would leave fleetd
// with no prompt box to type into. Altering the one screen the bridge
// read before it typed — "❯" becomes ">" — makes the replay fail, and
// the failure names the look whose decision changed (ready → no prompt
// box) and the typing that no longer follows from it.
func TestAnAlteredScreenFailsTheReplayNamingTheDecision(t *testing.T) {
	rec := loadScenario(t, "claude", "one-line-turn")
	k, _ := herdrbridge.KindOf(rec.Kind)
	if err := recording.Check(k, rec); err != nil {
		t.Fatalf("the unaltered recording does not replay: %v", err)
	}
	i := lastReadBefore(t, rec, recording.OpInput)
	screen := rec.Steps[i].Screen
	if !strings.Contains(rec.Screens[screen], "❯") {
		t.Fatalf("the screen read before the typing has no ❯:\n%s", rec.Screens[screen])
	}
	// A screen of its own, so that no other read of the same screen
	// changes with it.
	rec.Screens = append(rec.Screens, strings.ReplaceAll(rec.Screens[screen], "❯", ">"))
	rec.Steps[i].Screen = len(rec.Screens) - 1

	err := recording.Check(k, rec)
	if err == nil {
		t.Fatal("the replay of the altered screen passed")
	}
	msg := err.Error()
	for _, want := range []string{
		"the decisions changed",
		"+ read ",
		"composer=none → " + herdrbridge.AttentionNoPromptBox,
		"- read ",
		"composer=empty → " + herdrbridge.ScreenReady,
		"typed into pane-1 after a look that said \"" + herdrbridge.AttentionNoPromptBox + "\", not ready",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	t.Logf("the failure reads:\n%s", msg)
}
